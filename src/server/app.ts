// Builds the Fastify app around the core services. Only src/server/server.ts listens; tests
// build the app and use inject() or listen on port 0.
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { sendLimitHeaders } from '../limits/http.ts';
import { redactUrl } from '../logger.ts';
import type { Services } from '../services.ts';
import { answerClientError, answerFrameworkError, installErrorHandling } from '../http-kit/error-handler.ts';
import { installJsonBodyParser } from './json-body.ts';
import { installShutdownGate } from './shutdown-gate.ts';
import { operationsRoutes } from '../http/routes/operations.ts';
import { registerApiRoutes } from '../http/routes/index.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface AppOptions {
  /** Extra plugins registered at the root (MCP transports, web pages). */
  plugins?: ((app: FastifyInstance, svc: Services) => Promise<void> | void)[];
}

export async function buildApp(svc: Services, opts: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: svc.logger as FastifyBaseLogger,
    bodyLimit: svc.config.bodyLimit,
    trustProxy: svc.config.trustProxy,
    // A client's own X-Request-Id is kept when it is a plain token (useful for tracing);
    // anything else is replaced so it cannot inject into logs.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Fastify's own request lines log the raw URL (which may carry ?api_key=); dbq logs one
    // line per request itself, through redactUrl.
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: 'idle',
    // Requests during shutdown get the envelope from src/server/shutdown-gate.ts instead of
    // Fastify's own 503 body.
    return503OnClosing: false,
    // Every response is the envelope, also for what never becomes a routed request: bytes Node's
    // HTTP parser refuses, and URLs the router cannot decode (Fastify's own bodies otherwise).
    clientErrorHandler: (err, socket) => answerClientError(svc.logger as FastifyBaseLogger, err, socket),
    frameworkErrors: answerFrameworkError,
    routerOptions: { ignoreTrailingSlash: true },
  });

  installJsonBodyParser(app);
  app.decorateRequest('principal', null);
  // zod validates (parseInput); JSON Schemas on routes are for OpenAPI only.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // Root hooks run on every request: callback style, which Fastify runs without the promise an
  // async hook costs, and the log line is built only when it will be written.
  // The history's group commit gathers entries while other requests are in flight. 'close'
  // fires once per response, answered or abandoned, so the count cannot drift.
  const history = svc.history;
  const requestEnded = () => {
    history.inFlight--;
  };
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    history.inFlight++;
    reply.raw.once('close', requestEnded);
    done();
  });
  installShutdownGate(app);
  sendLimitHeaders(app);
  app.addHook('onResponse', (request, reply, done) => {
    if (svc.logger.isLevelEnabled('info')) {
      request.log.info(
        // No reqId here: request.log is a child logger that already carries it.
        { method: request.method, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request',
      );
    }
    done();
  });

  installErrorHandling(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'dbq API',
        version: '1',
        description:
          'Run SQL on PostgreSQL, MySQL/MariaDB and SQLite connections of a workspace. Every response is an envelope: {"success":true,"data":{…}} or {"success":false,"error":"…","code":"…"}.',
      },
      servers: [{ url: '/', description: 'default workspace (also /w/{slug})' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'dbq_… API key, or an OAuth access token (docs/oauth.md)' },
        },
      },
      security: [{ bearer: [] }],
    },
  });

  operationsRoutes(app, svc);
  await registerApiRoutes(app, svc);
  for (const plugin of opts.plugins ?? []) await plugin(app, svc);
  await app.ready();
  return app;
}
