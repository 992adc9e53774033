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
//   (engine.findReachRefusal); a plan-only EXPLAIN of a write also may reach no column
//   expression that runs code.
// - MySQL/MariaDB plan-only EXPLAIN of a write (verdict.planOnlyWrite): the server checks the
//   write's privileges, so where reads log in as a read-only user it is refused here with that
//   reason (an admin's on a writable connection then runs as a write, on the owner login).
import type { Deadline } from '../engines/deadline.ts';
import type { Engine, ReadAccessLevel } from '../engines/engine.ts';
import { QueryFailedError } from '../errors.ts';
import { classifyStatement } from './guard.ts';
import { findRefusal, type PostgresCatalog, type Refusal } from './read-policy.ts';
import type { Verdict } from './verdict.ts';
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
export async function decideStatement(engine: Engine, sql: string, deadline?: Deadline): Promise<Verdict> {
  const verdict = await classifyStatement(engine.name, sql);
  if (verdict.askEngine) return checkMysqlRead(engine, await askEngine(engine, sql, verdict));
  if (verdict.planOnlyWrite) return checkPlanLogin(engine, await checkMysqlRead(engine, verdict));
  if (verdict.calledFunctions !== undefined || verdict.relationNames !== undefined) return checkMysqlRead(engine, verdict);
  if (verdict.kind !== 'read' || verdict.references === undefined) return verdict;
  const catalog = await engine.readCatalog?.(false, deadline);
  // A dialect that collects names must have a catalog to judge them by.
  if (catalog === undefined) return unparseableVerdict(verdict.statementType);
  return checkReferences(engine, verdict, catalog, deadline);
}

async function checkReferences(engine: Engine, verdict: Verdict, catalog: PostgresCatalog, deadline?: Deadline): Promise<Verdict> {
  const refs = verdict.references!;
  let refusal = findRefusal(catalog, refs);
  // A function created a moment ago is not in the cached catalog yet: look once more.
  if (refusal?.missing) {
    const fresh = await engine.readCatalog?.(true, deadline);
    if (fresh !== undefined) refusal = findRefusal(fresh, refs);
  }
  if (refusal === undefined) return verdict;
  return refusedNameVerdict(verdict.statementType, WHAT[refusal.kind], refusal.name, `${refusal.why}; not allowed in a read`);
}

/** MySQL: a called name that is a stored function here runs that function, not a built-in. */
async function checkStoredFunctions(engine: Engine, verdict: Verdict): Promise<Verdict> {
  if (verdict.kind !== 'read' || !verdict.calledFunctions?.length || !engine.findStoredFunctions) return verdict;
  const [name] = await engine.findStoredFunctions(verdict.calledFunctions);
  if (name === undefined) return verdict;
  return refusedNameVerdict(verdict.statementType, 'Function', name, 'is a stored function of this database; not allowed in a read');
}

/** MySQL: stored functions among the calls, then the views the read reaches (their
 * definitions run with it, as their definer), and for a plan-only EXPLAIN of a write, which
 * runs outside the read-only transaction, the defaults and generated columns of the tables it
 * reaches (src/guard/read-policy-mysql.ts). */
async function checkMysqlRead(engine: Engine, verdict: Verdict): Promise<Verdict> {
  const checked = await checkStoredFunctions(engine, verdict);
  if (checked.kind !== 'read' || checked.relationNames === undefined || !engine.findReachRefusal) return checked;
  const refusal = await engine.findReachRefusal({ names: checked.relationNames, planOnly: checked.planOnlyWrite === true });
  if (refusal === undefined) return checked;
  if (checked.planOnlyWrite) {
    return { ...writeVerdict(checked.statementType, planReachReason(refusal)), details: { [refusal.what.toLowerCase()]: refusal.name } };
  }
  return refusedNameVerdict(checked.statementType, refusal.what, refusal.name, `${refusal.why}; not allowed in a read`);
}

/** How long the read login's privilege level is trusted before it is audited again. */
const PLAN_LOGIN_TTL_MS = 60_000;
const planLogins = new WeakMap<Engine, { level: Promise<ReadAccessLevel | null>; at: number }>();

/** The read login's privilege level (SHOW GRANTS on a side connection), cached per engine: an
 * edited record gets a new engine. Null when the audit fails: the engine's own refusal (1142)
 * then answers at run time. */
function planLoginLevel(engine: Engine): Promise<ReadAccessLevel | null> {
  const cached = planLogins.get(engine);
  if (cached && performance.now() - cached.at < PLAN_LOGIN_TTL_MS) return cached.level;
  const level = engine.readAccess!().then(
    (access) => access.level,
    () => null,
  );
  planLogins.set(engine, { level, at: performance.now() });
  return level;
}

/** MySQL/MariaDB plan-only EXPLAIN of a write: the server checks the write's privileges, and a
 * read never falls back to the owner login. A read login that can only read is refused here,
 * saying why (details.reason); an admin's on a writable connection then runs as a write. */
async function checkPlanLogin(engine: Engine, verdict: Verdict): Promise<Verdict> {
  if (verdict.kind !== 'read' || !engine.readAccess) return verdict;
  if ((await planLoginLevel(engine)) !== 'read_only') return verdict;
  return { ...writeVerdict(verdict.statementType, PLAN_ONLY_WRITE_DENIED_REASON), details: { reason: PLAN_ONLY_WRITE_DENIED_REASON } };
}

async function askEngine(engine: Engine, sql: string, verdict: Verdict): Promise<Verdict> {
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
