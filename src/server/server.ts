// The only place that listens. Graceful shutdown on SIGTERM/SIGINT: refuse new requests in the
// envelope and stop accepting connections, let in-flight queries finish for up to
// DBQ_SHUTDOWN_GRACE_MS, cancel the rest on their databases, then cut every connection still
// open and close pools and the store — bounded, whatever clients do (docs/deployment.md,
// "A stop (SIGTERM)").
import type { FastifyInstance } from 'fastify';
import { closeServices, type Services } from '../services.ts';
import { failAbandonedRunning, pruneHistory } from '../history/history.ts';
import { hasSearchIndex, startSearchIndexer } from '../history/search-index.ts';
import { pruneAudit } from '../audit/audit-list.ts';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  shutdown(): Promise<void>;
  /** After a signal, the process exits by then whatever is still running (exitOnSignals). */
  stopWithinMs: number;
}

/** Once the grace period has cancelled the statements still running, how long their requests
 * have to send their answers before every connection is cut. */
const SETTLE_MS = 500;
/** After the cut, for closing the pools and the store (history entries being written). */
const EXIT_MARGIN_MS = 1_000;

export async function startServer(svc: Services, app: FastifyInstance, opts: { host: string; port: number }): Promise<RunningServer> {
  const url = await app.listen({ host: opts.host, port: opts.port });
  const prune = () => {
    void pruneHistory(svc.db, svc.config.historyDays)
      .then((n) => n > 0 && svc.logger.info({ deleted: n }, 'history retention'))
      .catch((err) => svc.logger.warn({ err }, 'history retention failed'));
    void failAbandonedRunning(svc.db)
      .then((n) => n > 0 && svc.logger.warn({ entries: n }, 'history: writes left running by a stopped process marked failed'))
      .catch((err) => svc.logger.warn({ err }, 'history: marking abandoned running entries failed'));
    void pruneAudit(svc.db, svc.config.auditDays)
      .then((n) => n > 0 && svc.logger.info({ deleted: n }, 'audit log retention'))
      .catch((err) => svc.logger.warn({ err }, 'audit log retention failed'));
  };
  prune();
  const pruneTimer = setInterval(prune, 3_600_000).unref();
  const indexer =
    svc.config.historySearchIndex && hasSearchIndex(svc.db)
      ? startSearchIndexer(svc.db, { onError: (err) => svc.logger.warn({ err }, 'history search indexing failed') })
      : null;

  let closing: Promise<void> | null = null;
  const graceMs = svc.config.shutdownGraceMs;
  const shutdown = () => {
    closing ??= (async () => {
      // Before anything else, so no request, query or MCP session starts from here on.
      app.shutdownGate.begin();
      clearInterval(pruneTimer);
      svc.logger.info({ running: svc.running.size, graceMs }, 'shutting down');
      // Stops listening; the callback comes once every connection has ended.
      const connectionsEnded = new Promise<void>((resolve) => app.server.close(() => resolve()));
      // A keep-alive connection whose request finishes after shutdown began would hold the
      // server open for Fastify's 72 s keepAliveTimeout; close such sockets as they go idle.
      const reaper = setInterval(() => app.server.closeIdleConnections(), 50);
      try {
        const indexerStopped = indexer?.stop();
        // drain() lets statements run for the grace period, then cancels the rest: their
        // requests end with a 503, MCP sessions close once their calls are answered.
        const statements = svc.running.drain(graceMs);
        let timer: NodeJS.Timeout | undefined;
        const settled = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs + SETTLE_MS)));
        await Promise.race([Promise.all([connectionsEnded, statements]), settled]);
        clearTimeout(timer);
        // Whatever is still open now (an AI call, a stream a client will not read, a session
        // that sneaked in, a statement its database does not let go) is cut.
        app.shutdownGate.cut();
        app.server.closeAllConnections();
        await indexerStopped;
        await app.close();
      } finally {
        clearInterval(reaper);
      }
      await closeServices(svc);
      svc.logger.info('stopped');
    })();
    return closing;
  };
  return { app, url, shutdown, stopWithinMs: graceMs + SETTLE_MS + EXIT_MARGIN_MS };
}

export function exitOnSignals(server: RunningServer): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      // Whatever a client, a driver or the store does, the process is gone soon after the
      // grace period, before a supervisor's SIGKILL (systemd's TimeoutStopSec, docker stop -t)
      // would cut the history writes short (5 of 26 stops with MCP clients were once still
      // alive 40-89 s later).
      setTimeout(() => {
        server.app.log.error({ afterMs: server.stopWithinMs }, 'shutdown did not finish in time; exiting');
        process.exit(1);
      }, server.stopWithinMs).unref();
      server.shutdown().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}
