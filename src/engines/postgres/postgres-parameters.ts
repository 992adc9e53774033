// A statement given the wrong number of `params`. PostgreSQL refuses the Bind
// with 08P01 protocol_violation at severity ERROR: the session survives (a FATAL would end it),
// but the SQLSTATE's class 08 read as "connection exception" and the request answered 502 "the
// connection was lost" although the pooled connection was fine.
//
// The server's message ("bind message supplies 1 parameters, but prepared statement \"\"
// requires 2") speaks of protocol messages and is localised, so it is not parsed: the count the
// statement needs is asked from the server itself (Parse + Describe statement, which plans
// nothing and runs nothing), on the same connection, only on this failure path.
import pg from 'pg';
import { QueryFailedError } from '../../errors.ts';
import { parameterCountMismatch } from '../parameter-count.ts';

/** The refusal a count mismatch causes; any other 08P01 ERROR (there is none dbq's own messages
 * should provoke) still says what the server said. */
export function isBindRefused(err: unknown): err is pg.DatabaseError {
  return err instanceof pg.DatabaseError && err.code === '08P01' && err.severity === 'ERROR';
}

interface Connection {
  parse(msg: { text: string; name?: string; types?: number[] }): void;
  bind(msg: { portal?: string; statement?: string; values?: unknown[] }): void;
  execute(msg: { portal?: string; rows?: number }): void;
  describe(msg: { type: 'P' | 'S'; name?: string }): void;
  sync(): void;
  on(event: 'parameterDescription', listener: (msg: { parameterCount: number }) => void): void;
  off(event: 'parameterDescription', listener: (msg: { parameterCount: number }) => void): void;
}

/** A pg Submittable: ROLLBACK (a read's BEGIN READ ONLY is left aborted by the refused Bind, and
 * an aborted transaction refuses Parse too; outside a transaction it is only a warning), then
 * Parse + Describe of `text` as the unnamed statement, then Sync. */
class ParameterCount {
  readonly done: Promise<number>;
  private resolve!: (n: number) => void;
  private reject!: (e: Error) => void;
  private count: number | null = null;
  private error: Error | null = null;
  private connection: Connection | null = null;
  private readonly listen = (msg: { parameterCount: number }) => {
    this.count = msg.parameterCount;
  };

  constructor(private readonly text: string) {
    this.done = new Promise<number>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.done.catch(() => {});
  }

  submit(connection: Connection): Error | null {
    // pg's Client does not hand ParameterDescription to the active query; the connection emits it.
    this.connection = connection;
    connection.on('parameterDescription', this.listen);
    connection.parse({ text: 'ROLLBACK', name: '', types: [] });
    connection.bind({ portal: '', statement: '', values: [] });
    connection.execute({ portal: '', rows: 0 });
    connection.parse({ text: this.text, name: '', types: [] });
    connection.describe({ type: 'S', name: '' });
    connection.sync();
    return null;
  }

  private settle(): void {
    this.connection?.off('parameterDescription', this.listen);
    if (this.count !== null) this.resolve(this.count);
    else this.reject(this.error ?? new Error('no parameter description'));
  }

  handleError(err: Error): void {
    this.error ??= err;
    // A connection-level failure sends no ReadyForQuery.
    this.settle();
  }

  handleReadyForQuery(): void {
    this.settle();
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handleCopyInResponse(connection: { sendCopyFail(msg: string): void }): void {
    connection.sendCopyFail('COPY is not supported');
  }
  handleCopyData(): void {}
}

/** The 422 for a refused Bind: the counts when the server can say how many the statement uses,
 * else the server's own message. Queued on `client` behind the failed statement's Sync. */
export async function parameterCountError(
  client: pg.ClientBase,
  sql: string,
  given: number,
  refused: pg.DatabaseError,
): Promise<QueryFailedError> {
  const details = { sqlState: refused.code ?? null, position: null };
  const probe = new ParameterCount(sql);
  // pg returns a submittable itself, not a promise (the cast only picks an overload); its errors
  // reach probe.done through handleError.
  void client.query(probe as unknown as pg.QueryConfig);
  const needed = await probe.done.catch(() => null);
  if (needed === null || needed === given) return new QueryFailedError(refused.message, details, refused);
  return parameterCountMismatch(needed, given, details, refused);
}
