// Verdict constructors and the reasons every dialect shares, so the API reports one wording.
import type { RefusalKind, Verdict } from './verdict.ts';

export const MULTIPLE_STATEMENTS_REASON = 'Only one statement per request is allowed';
export const EMPTY_STATEMENT_REASON = 'No SQL statement to run (empty text or only comments)';
export const UNPARSEABLE_REASON = 'Statement could not be parsed as a read';

/** MySQL/MariaDB check the explained statement's write privileges for EXPLAIN of a write. */
export const PLAN_ONLY_WRITE_DENIED_REASON =
  "MariaDB/MySQL check write privileges for EXPLAIN of a write, and this connection's reads log in as a read-only user";

/** MySQL/MariaDB plan-only EXPLAIN of a write that reaches code (read-policy-mysql.ts). */
export function planReachReason(refusal: { what: string; name: string; why: string }): string {
  return `${refusal.what} ${refusal.name} ${refusal.why}. EXPLAIN of a write cannot run in MariaDB's read-only transaction, and MariaDB runs subqueries, derived tables and views while it plans, so such a plan may reach nothing that runs code`;
}

export function readVerdict(statementType: string): Verdict {
  return { kind: 'read', statementType };
}

export function writeVerdict(statementType: string, reason: string, refusal: RefusalKind = 'not_a_read'): Verdict {
  return { kind: 'write', statementType, reason, refusal };
}

export function multipleStatementsVerdict(): Verdict {
  return { kind: 'rejected', statementType: 'MULTIPLE', reason: MULTIPLE_STATEMENTS_REASON, refusal: 'multiple_statements' };
}

export function emptyStatementVerdict(): Verdict {
  return { kind: 'rejected', statementType: 'EMPTY', reason: EMPTY_STATEMENT_REASON, refusal: 'empty_statement' };
}

export function unparseableVerdict(statementType = 'UNKNOWN'): Verdict {
  return writeVerdict(statementType, UNPARSEABLE_REASON, 'unparseable');
}

export function notAReadReason(statementType: string): string {
  return `${statementType} statements are not reads`;
}

/** An EXPLAIN takes its kind from the statement it explains. */
export function explainVerdict(inner: Verdict): Verdict {
  // EXPLAIN plans, and planning folds IMMUTABLE calls with constant arguments (EXPLAIN ANALYZE
  // runs everything): the explained statement's names are checked as its own.
  if (inner.kind === 'read') return { ...inner, statementType: 'EXPLAIN' };
  if (inner.kind === 'rejected') return inner;
  return writeVerdict('EXPLAIN', `EXPLAIN of a statement that is not a read: ${inner.reason ?? inner.statementType}`, inner.refusal);
}

/** Text the engine cannot compile: 422 with the engine's own message, for every role. */
export function invalidVerdict(message: string, details: Readonly<Record<string, unknown>>): Verdict {
  return { kind: 'invalid', statementType: 'UNKNOWN', reason: message, refusal: 'syntax', details };
}

/** A read that calls something not known to be free of side effects. */
export function refusedNameVerdict(statementType: string, what: string, name: string, why: string): Verdict {
  return {
    kind: 'write',
    statementType,
    reason: `${what} ${name} ${why}`,
    refusal: 'refused_name',
    details: { [what.toLowerCase()]: name },
  };
}
