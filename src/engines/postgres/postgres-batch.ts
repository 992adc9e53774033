// One round trip per statement: the session set-up (BEGIN READ ONLY, SET LOCAL
// statement_timeout) and the user's statement go to the server as one corked extended-protocol
// pipeline — Parse/Bind/Execute for each set-up statement, then Parse/Bind/Describe/Execute
// with a row limit for the statement, then one Sync. pg-cursor (used for exports) writes every
// message separately and needs a second round trip to close its portal; on the /query hot
// path that was most of dbq's overhead over the raw driver.
//
// The protocol still guarantees one statement: Parse refuses text with several commands
// ("cannot insert multiple commands into a prepared statement"). A set-up failure skips the
// rest of the pipeline up to Sync, so the statement never runs outside its read-only
// transaction. The Execute row limit reads at most maxRows + 1 rows; the extra one says more
// existed (truncated).
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { RawRow } from './postgres-cursor.ts';
import { RowBudget } from '../row-budget.ts';

const prepareValue = (pg as unknown as { utils: { prepareValue(v: unknown): unknown } }).utils.prepareValue;

interface Connection {
  stream: { cork?: () => void; uncork?: () => void; destroyed?: boolean; writable?: boolean };
  parse(msg: { text: string; name?: string; types?: number[] }): void;
  bind(msg: { portal?: string; statement?: string; values?: unknown[]; binary?: boolean; valueMapper?: (v: unknown) => unknown }): void;
  describe(msg: { type: 'P' | 'S'; name?: string }): void;
  execute(msg: { portal?: string; rows?: number }): void;
  sync(): void;
}

/** A set-up or tear-down statement: text parsed on every use, or a statement prepared on the
 * connection under `name` (the server then skips parsing and planning it). */
export type Step = string | { name: string; text: string };

export interface BatchResult {
  fields: pg.FieldDef[];
  rows: RawRow[];
  truncated: boolean;
  command: string | null;
  rowCount: number | null;
}

/** A pg Submittable: `client.query(new PipelinedStatement(…))`, then `await batch.done`. */
export class PipelinedStatement extends EventEmitter {
  readonly done: Promise<BatchResult>;
  private resolve!: (r: BatchResult) => void;
  private reject!: (e: Error) => void;
  private error: Error | null = null;
  /** Statements of the pipeline finished so far; rows belong to the one at setup.length. */
  private position = 0;
  private readonly budget: RowBudget;
  private readonly result: BatchResult = { fields: [], rows: [], truncated: false, command: null, rowCount: null };
  /** The pipeline went out on an open socket. node-postgres fails a query on a client it knows
   * is dead without calling submit(). */
  written = false;
  /** The server answered some message of the pipeline. PostgreSQL sends its pending replies
   * before a FATAL error (pg_terminate_backend, shutdown), so a pipeline whose session the
   * server ended without any reply never started: nothing of it ran. */
  answered = false;

  constructor(
    private readonly setup: readonly Step[],
    private readonly text: string,
    private readonly values: readonly unknown[],
    private readonly maxRows: number,
    maxBytes: number,
    /** Run after the statement in the same pipeline (e.g. ROLLBACK), results ignored. */
    private readonly teardown: readonly Step[] = [],
    /** Send the Parse of the named steps: the connection has not prepared them yet. */
    private readonly parseNamed = false,
  ) {
    super();
    this.budget = new RowBudget(maxRows, maxBytes);
    this.done = new Promise<BatchResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // The promise is the interface; an unobserved rejection must not crash the process.
    this.done.catch(() => {});
  }

  submit(connection: Connection): Error | null {
    this.written = !connection.stream.destroyed && connection.stream.writable !== false;
    const run = (step: Step) => {
      if (typeof step === 'string') {
        connection.parse({ text: step, name: '', types: [] });
        connection.bind({ portal: '', statement: '', values: [] });
      } else {
        if (this.parseNamed) connection.parse({ text: step.text, name: step.name, types: [] });
        connection.bind({ portal: '', statement: step.name, values: [] });
      }
      connection.execute({ portal: '', rows: 0 });
    };
    connection.stream.cork?.();
    try {
      for (const step of this.setup) run(step);
      connection.parse({ text: this.text, name: '', types: [] });
      connection.bind({ portal: '', statement: '', values: [...this.values], binary: false, valueMapper: prepareValue });
      connection.describe({ type: 'P', name: '' });
      // One row past maxRows: PostgreSQL answers PortalSuspended whenever the limit is reached,
      // even when no further row exists, so only an extra row proves the result was cut.
      connection.execute({ portal: '', rows: this.maxRows + 1 });
      for (const step of this.teardown) run(step);
      connection.sync();
    } catch (err) {
      // A parameter that cannot be serialised: nothing reached the server unflushed, but the
      // messages before it did; Sync still closes the pipeline so the connection stays usable.
      this.error = err instanceof Error ? err : new Error(String(err));
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: pg.FieldDef[] }): void {
    this.answered = true;
    this.result.fields = msg.fields;
  }

  private get inStatement(): boolean {
    return this.position === this.setup.length;
  }

  handleDataRow(msg: { fields: RawRow }): void {
    this.answered = true;
    if (!this.inStatement || this.result.truncated) return;
    const row = msg.fields;
    if (this.budget.admit(rawRowSize(row))) this.result.rows.push(row);
    else this.result.truncated = true;
  }

  handlePortalSuspended(): void {
    this.answered = true;
    if (this.inStatement) this.result.truncated = true;
    this.position++;
  }

  handleCommandComplete(msg: { command?: string; rowCount?: number | null }): void {
    this.answered = true;
    if (this.inStatement) {
      this.result.command = msg.command ?? null;
      this.result.rowCount = msg.rowCount ?? null;
    }
    this.position++;
  }

  handleEmptyQuery(): void {
    this.answered = true;
    this.position++;
  }

  handleError(err: Error): void {
    // The server skips to Sync after an error and then sends ReadyForQuery; a connection-level
    // failure never will, so settle now either way (the first error wins).
    this.error ??= err;
    this.reject(this.error);
  }

  handleReadyForQuery(): void {
    this.answered = true;
    if (this.error) this.reject(this.error);
    else {
      if (this.budget.truncated) this.result.truncated = true;
      this.resolve(this.result);
    }
  }

  handleCopyInResponse(connection: { sendCopyFail(msg: string): void }): void {
    this.answered = true;
    connection.sendCopyFail('COPY is not supported');
  }

  handleCopyData(): void {}
}

function rawRowSize(row: RawRow): number {
  let size = 2;
  for (const value of row) size += value === null ? 5 : value.length + 3;
  return size;
}
