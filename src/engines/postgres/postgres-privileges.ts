// What a PostgreSQL login can do beyond reading (the privilege audit of the credential dbq
// reads with), and the statement that creates a login that can only read (--create-reader).
// Catalog SQL stays SQL; the assessment is a pure function of what it returns.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type { ReadAccess } from '../engine.ts';

/** Runs one catalog query on the audited login's own connection and returns its rows. */
export type CatalogQuery = (text: string) => Promise<Record<string, unknown>[]>;

// Predefined roles whose members reach the server itself or other sessions. pg_write_all_data
// (PostgreSQL 14+) is not in the issue's list but writes every table, so it is flagged too.
const DANGEROUS_ROLES: Record<string, string> = {
  pg_read_server_files: 'can read files on the database server',
  pg_write_server_files: 'can write files on the database server',
  pg_execute_server_program: 'can run programs on the database server',
  pg_signal_backend: 'can cancel and terminate other sessions',
  pg_write_all_data: 'can write every table',
};

// Non-system schemas: information_schema and everything named pg_* (pg_catalog, pg_toast,
// temp schemas) are the system's; the names are reserved.
const USER_SCHEMA = `n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'`;

export const ROLE_ATTRIBUTES_SQL = /* SQL */ `
SELECT rolsuper::text AS superuser, rolcreaterole::text AS createrole, rolcreatedb::text AS createdb,
       rolreplication::text AS replication, rolbypassrls::text AS bypassrls
FROM pg_roles WHERE rolname = current_user`;

/** One row, one JSON column: everything but the role attributes. pg_has_role(…, 'MEMBER')
 * follows memberships through any depth, inherited or reachable with SET ROLE. */
export const PRIVILEGE_FACTS_SQL = /* SQL */ `
WITH rel AS (
  SELECT format('%I.%I', n.nspname, c.relname) AS name, c.relkind,
         c.relkind IN ('r', 'p', 'v', 'f') AND has_any_column_privilege(c.oid, 'INSERT') AS ins,
         c.relkind IN ('r', 'p', 'v', 'f') AND has_any_column_privilege(c.oid, 'UPDATE') AS upd,
         c.relkind IN ('r', 'p', 'v', 'f') AND has_table_privilege(c.oid, 'DELETE') AS del,
         c.relkind IN ('r', 'p', 'f') AND has_table_privilege(c.oid, 'TRUNCATE') AS trn,
         c.relkind = 'S' AND (has_sequence_privilege(c.oid, 'USAGE') OR has_sequence_privilege(c.oid, 'UPDATE')) AS seq,
         pg_has_role(c.relowner, 'MEMBER') AS owned
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND ${USER_SCHEMA}
),
w AS (SELECT * FROM rel WHERE ins OR upd OR del OR trn),
-- SECURITY DEFINER functions of other owners it may call run with their owner's rights: the
-- one thing a read-only role cannot hold back (dbq's guard refuses them in reads).
definer AS (
  SELECT p.oid::regprocedure::text AS name
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE p.prosecdef AND ${USER_SCHEMA} AND NOT pg_has_role(p.proowner, 'MEMBER')
    AND has_function_privilege(p.oid, 'EXECUTE')
    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
)
SELECT json_build_object(
  'database', current_database(),
  'createOnDatabase', has_database_privilege(current_database(), 'CREATE'),
  'memberships', (SELECT coalesce(json_agg(r.rolname ORDER BY r.rolname), '[]')
                  FROM pg_roles r
                  WHERE r.rolname IN (${Object.keys(DANGEROUS_ROLES)
                    .map((r) => `'${r}'`)
                    .join(', ')})
                    AND pg_has_role(r.oid, 'MEMBER')),
  'createSchemas', (SELECT coalesce(json_agg(n.nspname ORDER BY n.nspname), '[]')
                    FROM pg_namespace n WHERE ${USER_SCHEMA} AND has_schema_privilege(n.oid, 'CREATE')),
  'write', json_build_object(
    'count', (SELECT count(*) FROM w),
    'privileges', json_build_array((SELECT bool_or(ins) FROM w), (SELECT bool_or(upd) FROM w),
                                   (SELECT bool_or(del) FROM w), (SELECT bool_or(trn) FROM w)),
    'examples', (SELECT coalesce(json_agg(name), '[]') FROM (SELECT name FROM w ORDER BY name LIMIT 3) e)),
  'sequences', json_build_object(
    'count', (SELECT count(*) FROM rel WHERE seq),
    'examples', (SELECT coalesce(json_agg(name), '[]') FROM (SELECT name FROM rel WHERE seq ORDER BY name LIMIT 3) e)),
  'owned', json_build_object(
    'count', (SELECT count(*) FROM rel WHERE owned),
    'examples', (SELECT coalesce(json_agg(name), '[]') FROM (SELECT name FROM rel WHERE owned ORDER BY name LIMIT 3) e)),
  'definers', json_build_object(
    'count', (SELECT count(*) FROM definer),
    'examples', (SELECT coalesce(json_agg(name), '[]') FROM (SELECT name FROM definer ORDER BY name LIMIT 3) e))
)::text AS facts`;

export interface PostgresRoleAttributes {
  superuser: boolean;
  createrole: boolean;
  createdb: boolean;
  replication: boolean;
  bypassrls: boolean;
}

interface Sample {
  count: number;
  examples: string[];
}

export interface PostgresPrivilegeFacts {
  database: string;
  createOnDatabase: boolean;
  memberships: string[];
  createSchemas: string[];
  /** INSERT, UPDATE, DELETE, TRUNCATE: whether any of the writable relations has each. */
  write: Sample & { privileges: (boolean | null)[] };
  sequences: Sample;
  owned: Sample;
  definers: Sample;
}

/** Audits the login `query` runs as. A superuser is reported as such without the rest: it
 * bypasses every other check. */
export async function readPostgresAccess(query: CatalogQuery): Promise<ReadAccess> {
  const [row] = await query(ROLE_ATTRIBUTES_SQL);
  const flag = (v: unknown) => v === true || v === 'true' || v === 't';
  const attributes: PostgresRoleAttributes = {
    superuser: flag(row?.superuser),
    createrole: flag(row?.createrole),
    createdb: flag(row?.createdb),
    replication: flag(row?.replication),
    bypassrls: flag(row?.bypassrls),
  };
  if (attributes.superuser) return assessPostgresAccess(attributes, null);
  const [facts] = await query(PRIVILEGE_FACTS_SQL);
  const raw = facts?.facts;
  return assessPostgresAccess(attributes, (typeof raw === 'string' ? JSON.parse(raw) : raw) as PostgresPrivilegeFacts);
}

export function assessPostgresAccess(role: PostgresRoleAttributes, facts: PostgresPrivilegeFacts | null): ReadAccess {
  if (role.superuser) {
    return {
      level: 'superuser',
      findings: ['superuser: can read and write every table, read and write server files and run programs on the server'],
    };
  }
  const findings: string[] = [];
  if (role.createrole) findings.push('CREATEROLE: can create roles and grant role memberships');
  if (role.createdb) findings.push('CREATEDB: can create databases');
  if (role.replication) findings.push('REPLICATION: can open replication connections and stream every change of the cluster');
  if (role.bypassrls) findings.push('BYPASSRLS: row-level security policies do not apply to it');
  if (facts) {
    for (const name of facts.memberships) if (DANGEROUS_ROLES[name]) findings.push(`member of ${name}: ${DANGEROUS_ROLES[name]}`);
    if (facts.createOnDatabase) findings.push(`CREATE on database ${facts.database}: can create schemas`);
    if (facts.createSchemas.length) {
      findings.push(
        `CREATE on schema${facts.createSchemas.length > 1 ? 's' : ''} ${facts.createSchemas.join(', ')}: can create tables, views and functions`,
      );
    }
    if (facts.write.count > 0) {
      const privileges = ['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'].filter((_, i) => facts.write.privileges[i]);
      findings.push(`${privileges.join(', ')} on ${plural(facts.write.count, 'table')}${examples(facts.write)}`);
    }
    if (facts.sequences.count > 0) findings.push(`can advance ${plural(facts.sequences.count, 'sequence')}${examples(facts.sequences)}`);
    if (facts.owned.count > 0)
      findings.push(`owns ${plural(facts.owned.count, 'table')} or other relations (can alter or drop them)${examples(facts.owned)}`);
    if (facts.definers?.count > 0) {
      findings.push(
        `can call ${plural(facts.definers.count, 'SECURITY DEFINER function')} of other owners, which run with their owner's rights${examples(facts.definers)}`,
      );
    }
  }
  return { level: findings.length ? 'can_write' : 'read_only', findings };
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function examples(sample: Sample): string {
  if (!sample.examples.length) return '';
  return `${sample.count > sample.examples.length ? ', e.g.' : ':'} ${sample.examples.join(', ')}`;
}

/** A SCRAM-SHA-256 verifier, so the new login's password never reaches the server (or its
 * statement log) in clear: PostgreSQL stores a pre-hashed password as given (RFC 5802/7677;
 * the password is ASCII, so SASLprep leaves it as is). */
export function scramVerifier(password: string, iterations = 4096): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** One DO block, so the role and its grants are created together or not at all. It can read
 * every table (pg_read_all_data on 14+; before that USAGE and SELECT on every non-system schema
 * as it is now, plus default privileges for tables the creating role makes later) and connect to
 * this database; nothing else. `role` is dbq-generated ([a-z0-9_]), so it needs no quoting. */
export function postgresReaderStatements(role: string, password: string): { create: string[]; undo: string[] } {
  if (!/^[a-z][a-z0-9_]*$/.test(role)) throw new Error('reader role names are generated lower-case identifiers');
  const verifier = scramVerifier(password);
  const create = /* SQL */ `DO $dbq$
DECLARE s text;
BEGIN
  CREATE ROLE ${role} LOGIN PASSWORD '${verifier}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO ${role}', current_database());
  IF current_setting('server_version_num')::int >= 140000 THEN
    EXECUTE 'GRANT pg_read_all_data TO ${role}';
  ELSE
    FOR s IN SELECT n.nspname FROM pg_namespace n WHERE ${USER_SCHEMA} LOOP
      EXECUTE format('GRANT USAGE ON SCHEMA %I TO ${role}', s);
      EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO ${role}', s);
      EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO ${role}', s);
    END LOOP;
  END IF;
END
$dbq$`;
  // DROP OWNED also revokes what was granted to the role in this database and on the database.
  return { create: [create], undo: [`DROP OWNED BY ${role}`, `DROP ROLE ${role}`] };
}
