// The whole read decision for one statement on one connection: the dialect's parser
// (src/guard/guard.ts, pure and cached per text), then what only the connection can answer.
// - PostgreSQL reads: every function, attribute-notation call, operator, cast target and
//   relation is checked against the connection's own catalog (src/guard/read-policy.ts).
// - Text the JavaScript parser cannot read (MySQL/MariaDB, SQLite): the engine compiles it
//   without running it. A syntax error answers 422 with the engine's message; a statement the
//   engine knows to write is not a read; otherwise the guard's lexical judgement stands (its
//   function allowlist applied to every `name(` in the text), and the engine's read-only
//   mode runs it.
// - MySQL/MariaDB reads: a view runs its definition, so the views a read names are followed
//   (findReachRefusal); a plan-only EXPLAIN of a write also may reach no column expression that
//   runs code.
// - MySQL/MariaDB plan-only EXPLAIN of a write (verdict.planOnlyWrite): the server checks the
//   write's privileges, so where reads log in as a read-only user it is refused here with that
//   reason (an admin's on a writable connection then runs as a write, on the owner login).
//   Allowed, it runs outside the read-only transaction only because runOptionsOf() tells the
//   engine so: the engine never classifies a statement itself.
// What is kept between decisions (catalog, views, the read login's level) is the
// ConnectionGuard's (connection-guard.ts); the engine only reads rows.
import type { Deadline } from '../engines/deadline.ts';
import type { ExecuteOptions } from '../engines/engine.ts';
import { QueryFailedError } from '../errors.ts';
import type { ConnectionGuard } from './connection-guard.ts';
import { classifyStatement } from './guard.ts';
import { VIEW_CHECK_MS } from './mysql-view-cache.ts';
import { findExpressionRefusal, followViews, type ReachRefusal } from './read-policy-mysql.ts';
import { findRefusal, mayTouchSession, type PostgresCatalog, type Refusal } from './read-policy.ts';
import type { MysqlName, Verdict } from './verdict.ts';
import {
  invalidVerdict,
  notAReadReason,
  PLAN_ONLY_WRITE_DENIED_REASON,
  planReachReason,
  refusedNameVerdict,
  unparseableVerdict,
  writeVerdict,
} from './verdict-builders.ts';

const WHAT: Record<Refusal['kind'], string> = { function: 'Function', operator: 'Operator', type: 'Type', relation: 'Relation' };

/** `deadline`: the request's; a catalog load or change check is waited for until then. */
export async function decideStatement(guard: ConnectionGuard, sql: string, deadline?: Deadline): Promise<Verdict> {
  const { engine } = guard;
  const verdict = await classifyStatement(engine.name, sql);
  if (verdict.askEngine) return checkMysqlRead(guard, await askEngine(guard, sql, verdict));
  if (verdict.planOnlyWrite) return checkPlanLogin(guard, await checkMysqlRead(guard, verdict));
  if (verdict.calledFunctions !== undefined || verdict.relationNames !== undefined) return checkMysqlRead(guard, verdict);
  if (verdict.kind !== 'read' || verdict.references === undefined) return verdict;
  // A dialect that collects names must have a catalog to judge them by.
  if (!engine.readCatalogRows) return unparseableVerdict(verdict.statementType);
  return checkReferences(guard, verdict, await guard.catalog.get(deadline), deadline);
}

/** What the engine is told beside readOnly to run a statement as decided: a plan-only EXPLAIN
 * of a write this decision let through leaves the read-only transaction for a rolled-back one. */
export function runOptionsOf(verdict: Verdict): Pick<ExecuteOptions, 'planOnly' | 'sessionUntouched'> {
  if (verdict.kind !== 'read') return NO_RUN_OPTIONS;
  if (verdict.planOnlyWrite === true) return { planOnly: { privilegeRefusal: PLAN_ONLY_WRITE_DENIED_REASON } };
  return verdict.sessionUntouched === true ? SESSION_UNTOUCHED : NO_RUN_OPTIONS;
}

const NO_RUN_OPTIONS = Object.freeze({});
const SESSION_UNTOUCHED = Object.freeze({ sessionUntouched: true as const });

async function checkReferences(guard: ConnectionGuard, verdict: Verdict, catalog: PostgresCatalog, deadline?: Deadline): Promise<Verdict> {
  const refs = verdict.references!;
  let refusal = findRefusal(catalog, refs);
  // A function created a moment ago is not in the cached catalog yet: look once more.
  if (refusal?.missing) {
    const fresh = await guard.catalog.reloadForMiss(deadline);
    if (fresh !== undefined) refusal = findRefusal(fresh, refs);
  }
  if (refusal === undefined) return mayTouchSession(catalog, refs) ? verdict : { ...verdict, sessionUntouched: true };
  return refusedNameVerdict(verdict.statementType, WHAT[refusal.kind], refusal.name, `${refusal.why}; not allowed in a read`);
}

/** MySQL: a called name that is a stored function here runs that function, not a built-in. */
async function checkStoredFunctions({ engine }: ConnectionGuard, verdict: Verdict): Promise<Verdict> {
  if (verdict.kind !== 'read' || !verdict.calledFunctions?.length || !engine.findStoredFunctions) return verdict;
  const [name] = await engine.findStoredFunctions(verdict.calledFunctions);
  if (name === undefined) return verdict;
  return refusedNameVerdict(verdict.statementType, 'Function', name, 'is a stored function of this database; not allowed in a read');
}

/** MySQL: stored functions among the calls, then the views the read reaches (their
 * definitions run with it, as their definer), and for a plan-only EXPLAIN of a write, which
 * runs outside the read-only transaction, the defaults and generated columns of the tables it
 * reaches (src/guard/read-policy-mysql.ts). */
async function checkMysqlRead(guard: ConnectionGuard, verdict: Verdict): Promise<Verdict> {
  const checked = await checkStoredFunctions(guard, verdict);
  if (checked.kind !== 'read' || checked.relationNames === undefined || !guard.engine.readViews) return checked;
  const refusal = await findReachRefusal(guard, checked.relationNames, checked.planOnlyWrite === true);
  if (refusal === undefined) return checked;
  if (checked.planOnlyWrite) {
    return {
      ...writeVerdict(checked.statementType, planReachReason(refusal), 'plan_reach'),
      details: { [refusal.what.toLowerCase()]: refusal.name },
    };
  }
  return refusedNameVerdict(checked.statementType, refusal.what, refusal.name, `${refusal.why}; not allowed in a read`);
}

/** The first view among a read's names (or reached through them) whose definition is not a
 * read's; for a plan-only EXPLAIN of a write (`planOnly`), which runs outside the read-only
 * transaction, also the first default or generated column of a table reached that runs code.
 * Ordinary reads use view definitions at most VIEW_CHECK_MS old; a plan-only EXPLAIN reads
 * them (and the column expressions) now. */
async function findReachRefusal(
  { engine, views }: ConnectionGuard,
  names: readonly MysqlName[],
  planOnly: boolean,
): Promise<ReachRefusal | undefined> {
  const { catalog, database } = await views.get(planOnly ? 0 : VIEW_CHECK_MS);
  const found = await followViews(catalog, names, database);
  if (found.refusal !== undefined) return found.refusal;
  if (found.calls.size > 0 && engine.findStoredFunctions) {
    // Views print a stored function's name quoted, which the call gate refuses; a name that
    // is built in elsewhere but stored here is asked about as a statement's own calls are.
    const [stored] = await engine.findStoredFunctions([...found.calls.keys()]);
    if (stored !== undefined)
      return { what: 'View', name: found.calls.get(stored)!, why: `calls ${stored}, a stored function of this database` };
  }
  if (!planOnly || !engine.readColumnExpressions) return undefined;
  return findExpressionRefusal(await engine.readColumnExpressions(found.tableNames));
}

/** MySQL/MariaDB plan-only EXPLAIN of a write: the server checks the write's privileges, and a
 * read never falls back to the owner login. A read login that can only read is refused here,
 * saying why (details.reason); an admin's on a writable connection then runs as a write. */
async function checkPlanLogin(guard: ConnectionGuard, verdict: Verdict): Promise<Verdict> {
  if (verdict.kind !== 'read' || !guard.engine.readAccess) return verdict;
  if ((await guard.planLoginLevel()) !== 'read_only') return verdict;
  return writeVerdict(verdict.statementType, PLAN_ONLY_WRITE_DENIED_REASON, 'plan_login');
}

async function askEngine({ engine }: ConnectionGuard, sql: string, verdict: Verdict): Promise<Verdict> {
  let readOnly: boolean | null;
  try {
    readOnly = (await engine.inspect?.(sql))?.readOnly ?? null;
  } catch (err) {
    if (err instanceof QueryFailedError) return invalidVerdict(err.message, err.details ?? {});
    throw err;
  }
  if (readOnly === false && verdict.kind === 'read') {
    return writeVerdict(verdict.statementType, notAReadReason(verdict.statementType));
  }
  return { ...verdict, askEngine: false };
}
