// The whole read decision for one statement on one connection: the dialect's parser
// (src/sql/guard.ts, pure and cached per text), then what only the connection can answer.
// - PostgreSQL reads: every function, attribute-notation call, operator, cast target and
//   relation is checked against the connection's own catalog (src/sql/read-policy.ts).
// - Text the JavaScript parser cannot read (MySQL/MariaDB, SQLite): the engine compiles it
//   without running it. A syntax error answers 422 with the engine's message; a statement the
//   engine knows to write is not a read; otherwise the guard's lexical judgement stands (its
//   function allowlist applied to every `name(` in the text), and the engine's read-only
//   mode runs it.
import type { Engine } from '../engines/engine.ts';
import { QueryFailedError } from '../errors.ts';
import { classifyStatement } from '../sql/guard.ts';
import { findRefusal, type PostgresCatalog, type Refusal } from '../sql/read-policy.ts';
import type { Verdict } from '../sql/verdict.ts';
import { invalidVerdict, notAReadReason, refusedNameVerdict, unparseableVerdict, writeVerdict } from '../sql/verdict-builders.ts';

const WHAT: Record<Refusal['kind'], string> = { function: 'Function', operator: 'Operator', type: 'Type', relation: 'Relation' };

export async function decideStatement(engine: Engine, sql: string): Promise<Verdict> {
  const verdict = await classifyStatement(engine.name, sql);
  if (verdict.askEngine) return checkStoredFunctions(engine, await askEngine(engine, sql, verdict));
  if (verdict.calledFunctions !== undefined) return checkStoredFunctions(engine, verdict);
  if (verdict.kind !== 'read' || verdict.references === undefined) return verdict;
  const catalog = await engine.readCatalog?.();
  // A dialect that collects names must have a catalog to judge them by.
  if (catalog === undefined) return unparseableVerdict(verdict.statementType);
  return checkReferences(engine, verdict, catalog);
}

async function checkReferences(engine: Engine, verdict: Verdict, catalog: PostgresCatalog): Promise<Verdict> {
  const refs = verdict.references!;
  let refusal = findRefusal(catalog, refs);
  // A function created a moment ago is not in the cached catalog yet: look once more.
  if (refusal?.why.startsWith('is not a known')) {
    const fresh = await engine.readCatalog?.(true);
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
