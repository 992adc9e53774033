// What the read-only guard decides about one request's SQL text. Pure data: the guard
// modules (guard-postgres.ts, guard-mysql.ts, guard-sqlite.ts) never do I/O.

export type VerdictKind =
  /** A single read statement: may run for any key, always inside the engine's read-only mode. */
  | 'read'
  /** A single statement that is not a read (or could not be proven one): admins only. */
  | 'write'
  /** Never runs for anyone: more than one statement, empty text. */
  | 'rejected';

export interface Verdict {
  kind: VerdictKind;
  /** Upper-case statement keyword for history/results: SELECT, INSERT, SHOW, EXPLAIN, … ;
   * UNKNOWN when the text did not parse. */
  statementType: string;
  /** Why a statement is not a read / was rejected; shown in 403/400 details. */
  reason?: string;
}

export type Classifier = (sql: string) => Verdict;
