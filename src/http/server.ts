// The only place that listens. Graceful shutdown on SIGTERM/SIGINT: stop accepting, let
// in-flight queries finish for up to DBQ_SHUTDOWN_GRACE_MS, cancel the rest on their
// databases, then close pools and the store.
import type { FastifyInstance } from 'fastify';
import { closeServices, type Services } from '../services.ts';
import { pruneHistory } from '../history/history.ts';
import { hasSearchIndex, startSearchIndexer } from '../history/search-index.ts';
import { pruneAudit } from '../access/audit-list.ts';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  shutdown(): Promise<void>;
}

export async function startServer(svc: Services, app: FastifyInstance, opts: { host: string; port: number }): Promise<RunningServer> {
  const url = await app.listen({ host: opts.host, port: opts.port });
  const prune = () => {
    void pruneHistory(svc.db, svc.config.historyDays)
      .then((n) => n > 0 && svc.logger.info({ deleted: n }, 'history retention'))
      .catch((err) => svc.logger.warn({ err }, 'history retention failed'));
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
  const shutdown = () => {
    closing ??= (async () => {
      clearInterval(pruneTimer);
      await indexer?.stop();
      svc.logger.info({ running: svc.running.size }, 'shutting down');
      // app.close() stops accepting and waits for in-flight requests; drain() bounds how long
      // their statements may take before they are cancelled, which lets those requests end.
      // A keep-alive connection whose request finishes after close() began would hold the
      // server open for Fastify's 72 s keepAliveTimeout; close such sockets as they go idle.
      const reaper = setInterval(() => app.server.closeIdleConnections(), 50);
      try {
        await Promise.all([app.close(), svc.running.drain(svc.config.shutdownGraceMs)]);
      } finally {
        clearInterval(reaper);
      }
      await closeServices(svc);
      svc.logger.info('stopped');
    })();
    return closing;
  };
  return { app, url, shutdown };
}

export function exitOnSignals(server: RunningServer): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      server.shutdown().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}
