// OID → PgType, per pool. Built-in OIDs come from postgres-values.ts; others (enums, arrays of
// enums, domains, extension types) are looked up in pg_type the first time a result carries
// them and cached for the pool's lifetime (an OID is never reused for a different live type).

import type pg from 'pg';
import { BUILTIN_TYPES, fallbackType, typeFromCatalog, type PgType, type PgTypeRow } from './postgres-values.ts';

const TYPES_SQL = /* SQL */ `
SELECT coalesce(json_agg(t), '[]') AS result
FROM (
  SELECT t.oid::int8 AS oid, t.typname, t.typcategory AS category, t.typdelim AS delim,
         t.typelem::int8 AS elem, CASE WHEN t.typtype = 'd' THEN t.typbasetype::int8 ELSE 0 END AS base
  FROM pg_catalog.pg_type t
  WHERE t.oid = ANY ($1::oid[])
) t`;

export type RunQuery = (text: string, values: unknown[]) => Promise<pg.QueryResult>;

export class PostgresTypes {
  private readonly byOid = new Map<number, PgType>(BUILTIN_TYPES);

  /** The fields' types when every one is already known (nearly always): no promise, no query. */
  known(fields: readonly pg.FieldDef[]): PgType[] | null {
    const types: PgType[] = [];
    for (const f of fields) {
      const type = this.byOid.get(f.dataTypeID);
      if (!type) return null;
      types.push(type);
    }
    return types;
  }

  async resolve(fields: readonly pg.FieldDef[], query: RunQuery): Promise<PgType[]> {
    const missing = [...new Set(fields.map((f) => f.dataTypeID).filter((oid) => !this.byOid.has(oid)))];
    if (missing.length) await this.lookup(missing, query);
    return fields.map((f) => this.byOid.get(f.dataTypeID) ?? fallbackType(f.dataTypeID));
  }

  private async lookup(missing: number[], query: RunQuery): Promise<void> {
    const rows = new Map<number, PgTypeRow>();
    let pending = missing;
    // Arrays name their element and domains their base type: follow them a few levels.
    for (let round = 0; round < 4 && pending.length; round++) {
      const result = await query(TYPES_SQL, [pending.map(String)]);
      const fetched = JSON.parse(String(result.rows[0].result)) as PgTypeRow[];
      for (const row of fetched) rows.set(row.oid, row);
      pending = fetched.flatMap((row) => [row.elem, row.base]).filter((oid) => oid && !this.byOid.has(oid) && !rows.has(oid));
    }
    const build = (oid: number): PgType | undefined => {
      const known = this.byOid.get(oid);
      if (known) return known;
      const row = rows.get(oid);
      if (!row) return undefined;
      const type = typeFromCatalog(row, build);
      this.byOid.set(oid, type);
      return type;
    };
    for (const oid of missing) build(oid);
  }
}
