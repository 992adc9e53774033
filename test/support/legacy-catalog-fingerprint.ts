// The catalog change check dbq used before it saw late commits, verbatim: row counts and the newest
// xmin of the catalogs it watched. Kept as the positive control of
// test/catalog-check-late-commit.test.ts (it misses a late commit) and as bench:catalog's
// baseline for cost.
export const LEGACY_FINGERPRINT = `
SELECT concat_ws(',',
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_proc),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_operator),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_type),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_cast),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_rewrite),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_policy),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_constraint),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_extension),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_namespace),
  (SELECT count(*) || ':' || max(xmin::text::int8) FROM pg_class),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_opclass),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_opfamily),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_amop),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_amproc),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_foreign_table),
  (SELECT count(*) || ':' || coalesce(max(xmin::text::int8), 0) FROM pg_inherits)
) AS fingerprint`;
