// Reads what src/guard/read-policy-mysql.ts judges from a MySQL/MariaDB connection: the
// definitions of the views the login can see, and the column expressions of the tables a
// plan-only EXPLAIN reaches. Raw rows only; how fresh they must be, and what they mean, is the
// guard's (src/guard/mysql-view-cache.ts, read-policy-mysql.ts).

export interface MysqlViewRow {
  schema: string;
  name: string;
  /** Empty when the login lacks SHOW VIEW: information_schema.VIEWS hides it then. */
  definition: string;
}

/** A column whose value an expression computes: a default (evaluated when a row is written)
 * or a generated column (evaluated whenever it is read). */
export interface MysqlExpressionRow {
  schema: string;
  table: string;
  column: string;
  kind: 'default' | 'generated';
  expression: string;
}

/** The views a login can see, and the database its statements default to (unqualified names
 * resolve there; null: none). */
export interface MysqlViews {
  database: string | null;
  views: MysqlViewRow[];
}

export type MysqlCatalogQuery = (sql: string, params: unknown[]) => Promise<unknown[][]>;

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
export async function readExpressionRows(
  query: MysqlCatalogQuery,
  tableNames: readonly string[],
  mariadb: boolean,
): Promise<MysqlExpressionRow[]> {
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
