// What the app does between SIGTERM and exit (src/server/server.ts runs the sequence). From the
// moment shutdown begins, every request — on a connection that was already open; the listener
// is closed — is answered 503 `shutting_down` in the envelope with `Retry-After` and
// `Connection: close`, before authentication or any route runs, so nothing new starts: no
// query, no MCP session (a session registered after the sessions were closed
// held server.close() open for good, and refused requests got Fastify's own 503 body). The
// front doors hear `stopping` (MCP stops taking sessions and closes those with nothing in
// flight) and `cut` (the grace period is over: whatever is still open is closed).
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { ShuttingDownError } from '../errors.ts';
import { envelopeOf } from '../http-kit/error-handler.ts';

declare module 'fastify' {
  interface FastifyInstance {
    shutdownGate: ShutdownGate;
  }
}

export class ShutdownGate {
  stopping = false;
  cutDone = false;
  private readonly onStopping: (() => void)[] = [];
  private readonly onCut: (() => void)[] = [];

  /** A listener's failure is logged, never thrown: it must not keep another front door's
   * sessions open or stop the shutdown. */
  constructor(private readonly log: FastifyBaseLogger) {}

  /** `fn` runs when shutdown begins (at once if it has). */
  whenStopping(fn: () => void): void {
    if (this.stopping) fn();
    else this.onStopping.push(fn);
  }

  /** `fn` runs when the grace period is over and what is still open must close. */
  whenCut(fn: () => void): void {
    if (this.cutDone) fn();
    else this.onCut.push(fn);
  }

  begin(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.runAll(this.onStopping.splice(0), 'stopping');
  }

  cut(): void {
    this.begin();
    if (this.cutDone) return;
    this.cutDone = true;
    this.runAll(this.onCut.splice(0), 'cut');
  }

  private runAll(fns: (() => void)[], step: string): void {
    for (const fn of fns) {
      try {
        fn();
      } catch (err) {
        this.log.error({ err, step }, 'shutdown step failed');
      }
    }
  }
}

/** Decorates the app with its gate and answers for it; called once, by buildApp, before any
 * route or front door is registered so that the refusal runs ahead of all of them. */
export function installShutdownGate(app: FastifyInstance): ShutdownGate {
  const gate = new ShutdownGate(app.log);
  app.decorate('shutdownGate', gate);
  const body = JSON.stringify(envelopeOf(new ShuttingDownError()));
  const retryAfter = String(ShuttingDownError.RETRY_AFTER_SECONDS);
  app.addHook('onRequest', (_request, reply, done) => {
    if (!gate.stopping) {
      done();
      return;
    }
    // Not an error of the request: answered here, without the error handler's 5xx log line.
    void reply.code(503).header('retry-after', retryAfter).header('connection', 'close').type('application/json; charset=utf-8').send(body);
  });
  // Answers of requests admitted before shutdown began close their connection too, so a
  // keep-alive client (a balancer's pool) moves to another process; a 503 among them (a
  // statement the grace period cut) says when to retry.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (gate.stopping) {
      reply.header('connection', 'close');
      if (reply.statusCode === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', retryAfter);
    }
    done(null, payload);
  });
  // app.close() without a signal (tests, embedders) refuses with the envelope too.
  app.addHook('preClose', (done) => {
    gate.begin();
    done();
  });
  return gate;
}
