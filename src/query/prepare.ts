// prepareQuery(): what every way of running a statement (runQuery, exports, async queries)
// starts from. Connection look-up → classify with the dialect's parser → permission; a
// refusal past the look-up writes its history entry.
import { performance } from 'node:perf_hooks';
import { getConnectionFor } from '../access/grants.ts';
import { assertRawAccess } from '../access/scope.ts';
import { DEFAULT_STATEMENT_TIMEOUT_MS, type Engine, type ExecuteOptions } from '../engines/engine.ts';
import { Deadline } from '../engines/deadline.ts';
import type { StopController, StopSignal } from '../engines/stop.ts';
import { InsufficientPermissionsError, InvalidRequestError, QueryFailedError } from '../errors.ts';
import type { HistorySource } from '../history/history.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import { decideStatement, runOptionsOf } from '../guard/decide.ts';
import type { Verdict } from '../guard/verdict.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { historyErrorOf, recordHistory, statusOf, type QueryIdentity } from './history-entry.ts';

export interface RunOptions {
  source: HistorySource;
  /** Aborted when the client goes away (or an async query is cancelled). */
  signal?: StopSignal;
  /** Instead of `signal`: a controller made for this one query (an HTTP request's), used as
   * the statement's own, so no second controller has to follow it. */
  controller?: StopController;
  /** Settles when the caller's plan limit admits the request (rejects when it does not). The
   * connection look-up starts before it is awaited, so the two round trips (Redis, a
   * PostgreSQL store) overlap; nothing runs and nothing is written until it has settled. */
  admitted?: Promise<void>;
  /** Forces the read-only path whatever the key (AI `execute` for read-only callers). */
  readOnly?: boolean;
  queryId?: string;
  /** Set when a curated tool runs the statement (src/tools/tools.ts): a toolsOnly key may run
   * it, and its history entry names the tool. */
  tool?: { name: string; version: number };
}

/** A statement that passed the connection look-up, the guard and the permission check: what
 * every way of running it (runQuery, exports, async queries) starts from. */
export interface PreparedQuery extends QueryIdentity {
  engine: Engine;
  /** Runs inside the engine's read-only mode. */
  readOnly: boolean;
  /** What the decision tells the engine beside readOnly (a plan-only EXPLAIN of a write). */
  runOptions: Pick<ExecuteOptions, 'planOnly' | 'sessionUntouched'>;
  /** Start + timeoutMs: the decision's catalog wait, the pool, the connect and the statement
   * all end there (src/engines/deadline.ts). */
  deadline: Deadline;
}

/** Connection look-up → guard → permission. A refusal writes its history entry and throws
 * (400 rejected / 403); an unknown connection throws 404 with no entry. */
export async function prepareQuery(
  svc: Services,
  principal: Principal,
  input: { connectionId: string; sql: string; timeoutMs?: number },
  opts: RunOptions,
): Promise<PreparedQuery> {
  const deadline = new Deadline(input.timeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS);
  // Observed at once: an early refusal below must not leave it unhandled. Awaited further down.
  opts.admitted?.catch(() => {});
  if (input.sql.length > svc.config.maxSqlLength) {
    throw new InvalidRequestError(`sql is longer than ${svc.config.maxSqlLength} characters`, { field: 'sql' });
  }
  // Before any look-up: a tools-only key learns nothing from raw SQL, not even which names exist.
  if (!opts.tool) assertRawAccess(principal);
  const lookup = getConnectionFor(svc, principal, input.connectionId);
  if (opts.admitted) {
    // A refused request answers 429 (not a 404 its look-up might have found) and does nothing.
    lookup.catch(() => {});
    await opts.admitted;
  }
  const row = await lookup;
  const started = performance.now();
  // Decided on the read engine: its catalog, its compiler, the reader login when there is one.
  const reader = svc.pools.forRead(row);
  const queryId = opts.queryId ?? newId('q');
  // Object literals rather than spreads, here and below: a spread of these objects cost ~0.85 µs
  // each on the request path, a literal ~0.04 µs.
  const identityWith = (verdict: Verdict): QueryIdentity => ({
    queryId,
    principal,
    connection: row,
    sql: input.sql,
    source: opts.source,
    started,
    tool: opts.tool,
    verdict,
  });
  let verdict: Verdict;
  try {
    verdict = await decideStatement(svc.readGuards.of(reader), input.sql, deadline);
  } catch (err) {
    // The decision itself needed the database (its catalog, its compiler) and did not get it:
    // a failed query like any other, with its one history entry.
    await recordHistory(svc, identityWith({ kind: 'write', statementType: 'UNKNOWN' }), statusOf(err), {
      error: historyErrorOf(err),
    });
    throw err;
  }
  const q = identityWith(verdict);

  if (verdict.kind === 'rejected') {
    const err = new InvalidRequestError(verdict.reason ?? 'Statement rejected', { field: 'sql' });
    await recordHistory(svc, q, 'rejected', { error: err.message });
    throw err;
  }
  if (verdict.kind === 'invalid') {
    // Not valid SQL for the engine: the same 422 the database would give, for every role.
    const err = new QueryFailedError(verdict.reason ?? 'syntax error', verdict.details);
    await recordHistory(svc, q, 'failed', { error: err.message });
    throw err;
  }
  if (verdict.kind === 'write') {
    const reason =
      principal.user.role !== 'admin'
        ? // A person signed in to the web app used no key: their role is what refuses.
          principal.apiKey === null
          ? 'your role (read-only) may run read statements only'
          : 'a read-only key may run read statements only'
        : row.read_only === 1
          ? 'the connection is read-only'
          : opts.readOnly
            ? 'only read statements may run here'
            : null;
    if (reason) {
      const err = new InsufficientPermissionsError({
        // A refusal that is the connection's own (its reads log in as a read-only user) says so.
        reason: verdict.refusal === 'plan_login' && verdict.reason !== undefined ? verdict.reason : reason,
        statementType: verdict.statementType,
        ...(verdict.reason === undefined ? {} : { why: verdict.reason }),
        ...verdict.details,
      });
      await recordHistory(svc, q, 'rejected', { error: `${err.message}: ${reason}` });
      throw err;
    }
  }
  const read = verdict.kind === 'read';
  return {
    queryId: q.queryId,
    principal: q.principal,
    connection: q.connection,
    sql: q.sql,
    source: q.source,
    started: q.started,
    tool: q.tool,
    verdict: q.verdict,
    engine: read ? reader : svc.pools.get(row),
    readOnly: read,
    runOptions: runOptionsOf(verdict),
    deadline,
  };
}
