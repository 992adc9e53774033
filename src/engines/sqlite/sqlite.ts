// SQLite adapter (better-sqlite3, run in child processes: see sqlite-runner.mjs for why).
// Owns: the pool of runner processes (at most min(maxConnections, 4), started lazily,
// replaced lazily after a kill), read-only mode (read-only handle + PRAGMA query_only +
// stmt.readonly), timeout and cancel by SIGKILL, error classification by SQLITE_* code.
// config.database is the absolute file path, already checked to be under DBQ_SQLITE_DIR/<slug>/.

import {
  ConnectionFailedError,
  DbqError,
  InsufficientPermissionsError,
  InternalError,
  QueryFailedError,
  StorageFullError,
} from '../../errors.ts';
import type {
  Engine,
  EngineConfig,
  ExecuteOptions,
  ExecuteResult,
  RowStream,
  SchemaTable,
  ObjectSearch,
  SchemaObject,
  StatementInfo,
  StreamOptions,
  TestResult,
} from '../engine.ts';
import type { ReadAccess } from '../engine.ts';
import { createRowIterable } from '../row-stream.ts';
import { RunnerError, SqliteChild } from './sqlite-children.ts';
import { Slots } from '../slots.ts';
import { StatementWatch } from '../statement-watch.ts';
import type { StopSignal } from '../stop.ts';

const MAX_CHILDREN = 4;
const KILL_GRACE_MS = 1_000;
const CATALOG_TIMEOUT_MS = 15_000;
const STREAM_BATCH = 500;

// Codes that mean "this file is not a usable database" rather than "this statement failed".
const CONNECTION_CODES = new Set(['SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_PERM', 'SQLITE_AUTH']);

interface Session {
  child: SqliteChild;
  watch: StatementWatch;
  /** Runs after the watch abandoned the child (a stream ends its iterator here). */
  onAbandon: (() => void) | null;
  end(): Promise<void>;
}

interface SessionOptions {
  timeoutMs: number;
  signal?: StopSignal;
}

export function createSqliteEngine(config: EngineConfig): Engine {
  return new SqliteEngine(config);
}

class SqliteEngine implements Engine {
  readonly name = 'sqlite' as const;
  readonly capabilities = { placeholder: '?', hasSchemas: false } as const;
  private readonly config: EngineConfig;
  private readonly slots: Slots;
  private readonly idle: SqliteChild[] = [];
  private readonly children = new Set<SqliteChild>();
  private readonly active = new Set<StatementWatch>();
  private closing: Promise<void> | null = null;

  constructor(config: EngineConfig) {
    this.config = config;
    this.slots = new Slots(Math.min(config.maxConnections, MAX_CHILDREN));
  }

  async execute(opts: ExecuteOptions): Promise<ExecuteResult> {
    const session = await this.open(opts);
    try {
      const result = await session.watch.run(
        session.child.call<Omit<ExecuteResult, 'rowCount'>>('execute', {
          sql: opts.sql,
          params: [...opts.params],
          readOnly: opts.readOnly,
          maxRows: opts.maxRows,
          maxBytes: opts.maxBytes,
          timeoutMs: opts.timeoutMs,
        }),
      );
      return {
        columns: result.columns,
        rows: result.rows,
        rowCount: result.rows.length,
        truncated: result.truncated,
        affectedRows: result.affectedRows,
      };
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      await session.end();
    }
  }

  async stream(opts: StreamOptions): Promise<RowStream> {
    const session = await this.open(opts);
    type Batch = { columns?: ExecuteResult['columns']; rows: unknown[][]; more: boolean };
    let first: Batch;
    try {
      first = await session.watch.run(
        session.child.call<Batch>('streamOpen', {
          sql: opts.sql,
          params: [...opts.params],
          readOnly: opts.readOnly,
          timeoutMs: opts.timeoutMs,
          batch: Math.min(STREAM_BATCH, opts.maxRows),
        }),
      );
    } catch (err) {
      await session.end();
      throw this.classify(err, session);
    }
    let pending: Batch | null = first;
    let more = first.more;
    // The child reads the next batch while this process encodes and sends the current one
    // (two processes, two cores): without it each batch waited a full IPC round trip and the
    // child's work. At most two batches are held.
    let ahead: Promise<Batch> | null = null;
    const fetchAhead = () => {
      if (!more) return;
      ahead = session.watch.run(session.child.call<Batch>('streamNext', { batch: STREAM_BATCH }));
      ahead.catch(() => {});
    };
    const { rows, abort } = createRowIterable(
      {
        pull: async () => {
          if (pending) {
            const batch = pending;
            pending = null;
            fetchAhead();
            return batch.rows.length || more ? batch.rows : null;
          }
          if (!ahead) return null;
          try {
            const next = await ahead;
            ahead = null;
            more = next.more;
            fetchAhead();
            return next.rows.length || more ? next.rows : null;
          } catch (err) {
            throw this.classify(err, session);
          }
        },
        cleanup: async () => {
          if (ahead) {
            await (ahead as Promise<Batch>).then(
              (next) => void (more = next.more),
              () => {},
            );
          }
          if (more && session.child.alive) await session.child.call('streamClose').catch(() => session.child.kill());
          await session.end();
        },
      },
      opts.maxRows,
    );
    session.onAbandon = () => abort(session.watch.error());
    return { columns: first.columns ?? [], rows };
  }

  async validate(sql: string): Promise<void> {
    await this.inspect(sql);
  }

  /** The statement compiled on the read-only handle: SQLite's own sqlite3_stmt_readonly. */
  async inspect(sql: string): Promise<StatementInfo> {
    const session = await this.open({ timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      const info = await session.watch.run(session.child.call<{ readonly: boolean }>('validate', { sql }));
      return { readOnly: info.readonly };
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      await session.end();
    }
  }

  async test(timeoutMs: number): Promise<TestResult> {
    // A fresh process and handle, not a pooled one: the test must not wait behind queries.
    const child = new SqliteChild(this.config.database);
    let timer: NodeJS.Timeout | undefined;
    try {
      // Spawning is part of the "connection": it counts against timeoutMs here.
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ConnectionFailedError(`timed out after ${timeoutMs} ms`)), timeoutMs);
      });
      const work = child.call<{ version: string }>('test');
      work.catch(() => {});
      const { version } = await Promise.race([work, deadline]);
      return { serverVersion: `SQLite ${version}` };
    } catch (err) {
      if (err instanceof DbqError) throw err;
      throw new ConnectionFailedError(err instanceof Error ? err.message : String(err), err);
    } finally {
      clearTimeout(timer);
      child.kill();
    }
  }

  async listTables(schema?: string): Promise<SchemaTable[]> {
    if (schema && schema !== 'main') return [];
    const session = await this.open({ timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      return await session.watch.run(session.child.call<SchemaTable[]>('listTables'));
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      await session.end();
    }
  }

  async searchObjects(search: ObjectSearch): Promise<SchemaObject[]> {
    const session = await this.open({ timeoutMs: CATALOG_TIMEOUT_MS });
    try {
      return await session.watch.run(session.child.call<SchemaObject[]>('searchObjects', { kind: search.kind, like: search.like }));
    } catch (err) {
      throw this.classify(err, session);
    } finally {
      await session.end();
    }
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.slots.close(new ConnectionFailedError('the connection was closed'));
    for (const watch of this.active) watch.stop('canceled');
    const exits = [...this.children].map((child) => {
      // A parked child is unref'd: waiting for its exit must keep the process alive, or a
      // CLI command that read through the pool ends with Node's "unsettled await" (exit 13).
      child.unpark();
      child.kill();
      return child.exitedPromise();
    });
    this.idle.length = 0;
    this.closing = Promise.all(exits).then(() => {});
    return this.closing;
  }

  private async open(opts: SessionOptions): Promise<Session> {
    const releaseSlot = await this.slots.acquire(this.config.acquireTimeoutMs, opts.signal);
    if (this.closing) {
      releaseSlot();
      throw new ConnectionFailedError('the connection was closed');
    }
    let child = this.idle.pop();
    while (child && !child.alive) child = this.idle.pop();
    child ??= this.spawn();
    child.unpark();
    try {
      await child.whenReady(this.config.connectTimeoutMs);
    } catch (err) {
      this.forget(child);
      releaseSlot();
      throw classifySqliteError(err);
    }
    let ended = false;
    const session: Session = {
      child,
      onAbandon: null,
      watch: new StatementWatch({
        timeoutMs: Math.max(1, Math.floor(opts.timeoutMs)),
        // No server to enforce the timeout: the kill is the enforcement, at the deadline.
        backstopMs: 0,
        graceMs: KILL_GRACE_MS,
        signal: opts.signal,
        // The statement is over when the process is: wait for the exit, so the request does
        // not end while the runner is still burning CPU.
        cancel: () => child.killAndWait(KILL_GRACE_MS),
        abandon: () => {
          child.kill();
          session.onAbandon?.();
        },
      }),
      end: async () => {
        if (ended) return;
        ended = true;
        this.active.delete(session.watch);
        await session.watch.finish();
        if (child.alive && !this.closing) {
          this.idle.push(child);
          child.park(() => this.forget(child));
        } else {
          this.forget(child);
        }
        releaseSlot();
      },
    };
    this.active.add(session.watch);
    return session;
  }

  private spawn(): SqliteChild {
    const child = new SqliteChild(this.config.database);
    this.children.add(child);
    void child.exitedPromise().then(() => this.forget(child));
    return child;
  }

  private forget(child: SqliteChild): void {
    this.children.delete(child);
    const i = this.idle.indexOf(child);
    if (i >= 0) this.idle.splice(i, 1);
  }

  private classify(err: unknown, session: Session): DbqError {
    if (session.watch.reason) return session.watch.error();
    return classifySqliteError(err);
  }

  /** SQLite has no logins: a read runs on a handle opened read-only with PRAGMA query_only, so
   * what reads can do is fixed whoever asks. */
  async readAccess(): Promise<ReadAccess> {
    return { level: 'read_only', findings: [] };
  }
}

export function classifySqliteError(err: unknown): DbqError {
  if (err instanceof DbqError) return err;
  if (!(err instanceof RunnerError)) return new InternalError(err);
  const { kind, code, message } = err.failure;
  switch (kind) {
    case 'permission':
      return new InsufficientPermissionsError({ reason: message });
    case 'open':
    case 'exited':
      return new ConnectionFailedError(message, err);
    case 'sqlite':
      if (code && CONNECTION_CODES.has(code)) return new ConnectionFailedError(message, err);
      // The file lives on dbq's own host (DBQ_SQLITE_DIR): a full disk there is the operator's
      // to fix, not a statement the database refused.
      if (code === 'SQLITE_FULL') return new StorageFullError('database', err);
      return new QueryFailedError(message, { sqlState: code, position: null, ...hintFor(message) }, err);
    default:
      return new QueryFailedError(message, { sqlState: null, position: null }, err);
  }
}

/** better-sqlite3 is built with SQLITE_DQS=0, as the SQLite CLI is since 3.41: `"USA"` names a
 * column. SQLite's own message asks the question; the hint answers it (docs/decisions.md). */
function hintFor(message: string): { hint?: string } {
  if (!message.includes('should this be a string literal in single-quotes?')) return {};
  return {
    hint: "Double quotes name a column or table in SQL; write a string in single quotes ('USA'). dbq's SQLite follows the standard here, as the sqlite3 shell does since 3.41.",
  };
}
