// Reads what src/guard/read-policy-mysql.ts judges from a MySQL/MariaDB connection — the
// definitions of the views the login can see, and the column expressions of the tables a
// plan-only EXPLAIN reaches — and keeps the views per engine.
//
// Freshness, as for PostgreSQL (postgres-catalog.ts): no ordinary read is decided with view
// definitions read more than CHECK_MS ago; the next decision after that reloads them (one load
// shared by every decision waiting). MySQL has no cheap change marker (no xmin; a checksum of
// the definitions costs the server what reading them costs, and CRC32 collisions are made to
// order), so the check is the reload itself; judgements are kept per definition text, so an
// unchanged view is not parsed again. A plan-only EXPLAIN of a write, which runs outside the
// read-only transaction, waits for a load that started after it was asked. DDL run through
// dbq drops the cache (invalidate()).
import { buildViewCatalog, type DefinitionJudgement, type MysqlExpressionRow, type MysqlViewCatalog, type MysqlViewRow } from '../../guard/read-policy-mysql.ts';

export type MysqlCatalogQuery = (sql: string, params: unknown[]) => Promise<unknown[][]>;

export const VIEW_CHECK_MS = 1_000;

// Every view the login can see, in every database: a read may name `other_db.v`. Without SHOW
// VIEW the definition reads as '' (judged unreadable, so refused).
const VIEWS = /* SQL */ `SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS`;

// MariaDB quotes literal defaults ('a', NULL) and prints expressions; MySQL 8 prints a literal
// bare and marks an expression DEFAULT_GENERATED. GENERATION_EXPRESSION is NULL on MariaDB and
// '' on MySQL for a plain column.
function expressionsSql(count: number): string {
  return /* SQL */ `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_DEFAULT, GENERATION_EXPRESSION, EXTRA
FROM information_schema.COLUMNS
WHERE TABLE_NAME IN (${Array.from({ length: count }, () => '?').join(', ')})
  AND (COLUMN_DEFAULT IS NOT NULL OR COALESCE(GENERATION_EXPRESSION, '') <> '')`;
}

export async function readViewRows(query: MysqlCatalogQuery): Promise<MysqlViewRow[]> {
  const rows = await query(VIEWS, []);
  return rows.map((row) => ({ schema: String(row[0]), name: String(row[1]), definition: row[2] === null ? '' : String(row[2]) }));
}

/** Defaults and generated columns of every table named like one of `tableNames`, in any
 * database (information_schema compares names case-insensitively: more rows, never fewer). */
export async function readExpressionRows(query: MysqlCatalogQuery, tableNames: readonly string[], mariadb: boolean): Promise<MysqlExpressionRow[]> {
  if (tableNames.length === 0) return [];
  const rows = await query(expressionsSql(tableNames.length), [...tableNames]);
  const found: MysqlExpressionRow[] = [];
  for (const [schema, table, column, columnDefault, generated, extra] of rows) {
    const where = { schema: String(schema), table: String(table), column: String(column) };
    if (generated !== null && String(generated) !== '') found.push({ ...where, kind: 'generated', expression: String(generated) });
    else if (columnDefault !== null && (mariadb || /DEFAULT_GENERATED/i.test(String(extra)))) {
      found.push({ ...where, kind: 'default', expression: String(columnDefault) });
    }
  }
  return found;
}

/** One engine's view catalog, kept fresh as described above. */
export class MysqlViewCache {
  private current: { catalog: MysqlViewCatalog; startedAt: number } | null = null;
  private loading: { promise: Promise<MysqlViewCatalog>; startedAt: number } | null = null;
  /** Judgements by definition text, pruned to the definitions of the latest load. */
  private readonly judged = new Map<string, Promise<DefinitionJudgement>>();

  constructor(private readonly read: () => Promise<MysqlViewRow[]>) {}

  /** A catalog whose load started at most `maxAgeMs` ago (0: after this call). */
  get(maxAgeMs: number): Promise<MysqlViewCatalog> {
    const since = performance.now() - maxAgeMs;
    if (maxAgeMs > 0 && this.current !== null && this.current.startedAt >= since) return Promise.resolve(this.current.catalog);
    if (maxAgeMs > 0 && this.loading !== null && this.loading.startedAt >= since) return this.loading.promise;
    return this.load();
  }

  invalidate(): void {
    this.current = null;
  }

  private load(): Promise<MysqlViewCatalog> {
    const startedAt = performance.now();
    const promise = this.read().then((rows) => {
      const definitions = new Set(rows.map((row) => row.definition));
      for (const definition of this.judged.keys()) if (!definitions.has(definition)) this.judged.delete(definition);
      const catalog = buildViewCatalog(rows, this.judged);
      // Loads may overlap (a plan-only decision starts its own): the newest start wins.
      if (this.current === null || this.current.startedAt < startedAt) this.current = { catalog, startedAt };
      return catalog;
    });
    const entry = { promise, startedAt };
    this.loading = entry;
    const settle = () => {
      if (this.loading === entry) this.loading = null;
    };
    promise.then(settle, settle);
    return promise;
  }
}
