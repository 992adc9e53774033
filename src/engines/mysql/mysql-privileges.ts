// What a MySQL/MariaDB account can do beyond reading (the privilege audit of the credential dbq
// reads with), read from SHOW GRANTS, and the statements that create an account that can only
// read (--create-reader). Parsing and assessment are pure; the adapter supplies the queries.
import type { ReadAccess } from '../engine.ts';

/** SHOW GRANTS FOR <whom>, each line as text. */
export type ShowGrants = (whom: string) => Promise<string[]>;

export const CURRENT_USER = 'CURRENT_USER()';

// Privileges that only read (or show what exists). Everything else is a finding.
const READ_PRIVILEGES = new Set(['USAGE', 'SELECT', 'SHOW VIEW', 'SHOW DATABASES', 'SHOW_ROUTINE']);

// Named findings; other privileges are grouped as writes (below) or administration.
const NAMED: Record<string, string> = {
  SUPER: 'SUPER: can change server settings, kill other sessions and write even when the server is read-only',
  FILE: 'FILE: can read and write files on the database server',
  PROCESS: "PROCESS: can see every session's statements",
  SHUTDOWN: 'SHUTDOWN: can stop the server',
  'CREATE USER': 'CREATE USER: can create, change and drop accounts',
  PROXY: 'PROXY: can act as other accounts',
};

const WRITE_PRIVILEGES = new Set([
  'ALL',
  'ALL PRIVILEGES',
  'INSERT',
  'UPDATE',
  'DELETE',
  'CREATE',
  'DROP',
  'ALTER',
  'INDEX',
  'REFERENCES',
  'CREATE VIEW',
  'CREATE ROUTINE',
  'ALTER ROUTINE',
  'EXECUTE',
  'TRIGGER',
  'EVENT',
  'CREATE TEMPORARY TABLES',
  'LOCK TABLES',
  'DELETE HISTORY',
  'CREATE TABLESPACE',
]);

export interface ParsedGrant {
  /** Privilege names, upper-case, column lists dropped; empty for a role grant. */
  privileges: string[];
  /** `*.*`, `db.*`, `db.table`, `PROCEDURE db.p`, …, as printed but unquoted; null for a role grant. */
  on: string | null;
  /** Roles granted (as printed, quoted), for a role grant. */
  roles: string[];
  grantOption: boolean;
}

/** Splits at `sep` outside parentheses, quotes and backticks. */
function splitTop(text: string, sep: RegExp): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === quote) {
        if (text[i + 1] === quote) i++;
        else quote = null;
      } else if (ch === '\\' && quote === "'") i++;
      continue;
    }
    if (ch === '`' || ch === "'" || ch === '"') quote = ch;
    else if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (depth === 0) {
      const m = sep.exec(text.slice(i));
      if (m && m.index === 0) {
        parts.push(text.slice(start, i));
        i += m[0].length - 1;
        start = i + 1;
      }
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function unquote(target: string): string {
  return target.replace(/`((?:[^`]|``)*)`/g, (_, name: string) => name.replace(/``/g, '`')).trim();
}

/** One SHOW GRANTS line; null for lines that grant nothing (SET DEFAULT ROLE, REVOKE …). */
export function parseGrant(line: string): ParsedGrant | null {
  const m = /^\s*GRANT\s+([\s\S]*)$/i.exec(line);
  if (!m) return null;
  const [head, ...rest] = splitTop(m[1], /^\s+TO\s+/i);
  if (!rest.length) return null;
  const tail = rest.join(' TO ').replace(/'(?:[^'\\]|\\.|'')*'/g, "''");
  const grantOption = /\bWITH\b[\s\S]*\bGRANT\s+OPTION\b/i.test(tail);
  const onParts = splitTop(head, /^\s+ON\s+/i);
  if (onParts.length < 2) {
    return {
      privileges: [],
      on: null,
      roles: splitTop(head, /^\s*,\s*/)
        .map((r) => r.trim())
        .filter(Boolean),
      grantOption,
    };
  }
  const privileges = splitTop(onParts[0], /^\s*,\s*/)
    .map((p) =>
      p
        .replace(/\([\s\S]*\)/, '')
        .replace(/\s+/g, ' ')
        .trim()
        .toUpperCase(),
    )
    .filter(Boolean);
  return { privileges, on: unquote(onParts.slice(1).join(' ON ')), roles: [], grantOption };
}

/** Assesses SHOW GRANTS lines (the account's and those of the roles it may use). */
export function assessMysqlGrants(lines: string[]): ReadAccess {
  const superuser: string[] = [];
  const named = new Set<string>();
  const other: string[] = [];
  for (const line of lines) {
    const grant = parseGrant(line);
    if (!grant || grant.on === null) continue;
    const global = grant.on === '*.*';
    if (grant.privileges.includes('PROXY')) {
      named.add(NAMED.PROXY);
      continue;
    }
    if (global && grant.privileges.some((p) => p === 'ALL' || p === 'ALL PRIVILEGES')) {
      superuser.push('ALL PRIVILEGES on *.*: can change any data and any account, and read and write server files');
    } else {
      const writes: string[] = [];
      const admin: string[] = [];
      for (const p of grant.privileges) {
        if (READ_PRIVILEGES.has(p)) continue;
        if (p === 'SUPER' && global) superuser.push(NAMED.SUPER);
        else if (NAMED[p]) named.add(NAMED[p]);
        else if (WRITE_PRIVILEGES.has(p)) writes.push(p === 'ALL' ? 'ALL PRIVILEGES' : p);
        else admin.push(p);
      }
      if (writes.length) other.push(`write privileges on ${grant.on}: ${writes.join(', ')}`);
      if (admin.length) other.push(`administrative privileges on ${grant.on}: ${admin.join(', ')}`);
    }
    if (grant.grantOption) other.push(`GRANT OPTION on ${grant.on}: can pass its privileges to other accounts`);
  }
  const findings = [...superuser, ...named, ...other];
  return { level: superuser.length ? 'superuser' : findings.length ? 'can_write' : 'read_only', findings };
}

/** Reads the current account's grants and, through any depth, those of the roles granted to it
 * (MariaDB and MySQL 8 roles can be switched to with SET ROLE, so they count). A role whose
 * grants cannot be read is a finding: dbq cannot vouch for it. */
export async function readMysqlAccess(showGrants: ShowGrants): Promise<ReadAccess> {
  const lines = await showGrants(CURRENT_USER);
  const seen = new Set<string>();
  const unreadable: string[] = [];
  const queue = roleGrantsOf(lines);
  while (queue.length) {
    const role = queue.shift()!;
    if (seen.has(role) || seen.size >= 50) continue;
    seen.add(role);
    try {
      const roleLines = await showGrants(role);
      lines.push(...roleLines);
      queue.push(...roleGrantsOf(roleLines));
    } catch {
      unreadable.push(`has role ${unquote(role)}, whose privileges could not be read`);
    }
  }
  const access = assessMysqlGrants(lines);
  if (!unreadable.length) return access;
  return { level: access.level === 'superuser' ? 'superuser' : 'can_write', findings: [...access.findings, ...unreadable] };
}

// Role names as SHOW GRANTS prints them: `r`, `r`@`%`, 'r'@'h'. Anything else is not passed
// back to the server.
const ROLE_TOKEN = /^(?:`(?:[^`]|``)+`|'(?:[^'\\]|'')+')(?:@(?:`(?:[^`]|``)*`|'(?:[^'\\]|'')*'))?$/;

function roleGrantsOf(lines: string[]): string[] {
  const roles: string[] = [];
  for (const line of lines) {
    const grant = parseGrant(line);
    if (grant && grant.on === null) roles.push(...grant.roles.filter((r) => ROLE_TOKEN.test(r)));
  }
  return roles;
}

/** CREATE USER then GRANT SELECT, SHOW VIEW on this one database; `undo` drops the account
 * if the grant fails. `_` and `%` are wildcards in a GRANT's database name, so they are
 * escaped: the grant covers this database only. */
export function mysqlReaderStatements(user: string, password: string, database: string): { create: string[]; undo: string[] } {
  if (!/^[a-z][a-z0-9_]*$/.test(user)) throw new Error('reader account names are generated lower-case identifiers');
  if (!/^[A-Za-z0-9_-]+$/.test(password)) throw new Error('reader passwords are generated base64url text');
  const account = `'${user}'@'%'`;
  const db = '`' + database.replace(/`/g, '``').replace(/([\\_%])/g, '\\$1') + '`';
  return {
    create: [`CREATE USER ${account} IDENTIFIED BY '${password}'`, `GRANT SELECT, SHOW VIEW ON ${db}.* TO ${account}`],
    undo: [`DROP USER IF EXISTS ${account}`],
  };
}
