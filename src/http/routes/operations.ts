// Liveness, readiness, metrics and the human docs page: outside /api, no API key.
import type { FastifyInstance } from 'fastify';
import client from 'prom-client';
import { InvalidApiKeyError } from '../../errors.ts';
import type { Services } from '../../services.ts';
import { bearerToken } from '../../http-kit/auth.ts';
import { ok } from '../../http-kit/schema.ts';
import { assertWorkspaceExists } from './openapi.ts';
import { DOCS_HTML } from './docs-page.ts';
import { FAVICON_ICO } from '../favicon.ts';

export function operationsRoutes(app: FastifyInstance, svc: Services): void {
  // A registry per app, not prom-client's global one: two apps in one test process (or one
  // process serving twice) must not collide on metric names.
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({
    name: 'dbq_http_requests_total',
    help: 'HTTP requests',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: 'dbq_http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  new client.Gauge({
    name: 'dbq_queries_running',
    help: 'Statements in flight',
    registers: [registry],
    collect() {
      this.set(svc.running.size);
    },
  });

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: reply.statusCode });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });

  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('image/x-icon').header('cache-control', 'public, max-age=86400').send(FAVICON_ICO),
  );

  app.get('/healthz', { schema: { hide: true } }, async () => ok({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await svc.store.ping();
      return ok({ status: 'ready', store: svc.store.kind });
    } catch {
      return reply.status(503).send({ success: false, error: 'Store unreachable', code: 'not_ready' });
    }
  });

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (svc.config.metricsToken && bearerToken(request) !== svc.config.metricsToken) throw new InvalidApiKeyError();
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  // /api/docs as well: people look for the API's docs under the API's own prefix.
  for (const path of ['/docs', '/w/:workspace/docs', '/api/docs', '/w/:workspace/api/docs']) {
    app.get(path, { schema: { hide: true } }, async (request, reply) => {
      await assertWorkspaceExists(svc, request);
      return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'")
        .send(DOCS_HTML);
    });
  }
}
