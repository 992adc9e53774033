// createReader / --create-reader: with the connection's own (admin) credentials, dbq creates a
// login that can only read, under a random name with a strong random password, to be stored
// as the connection's reader credentials. The statements are the engines' own
// (postgres-privileges.ts, mysql-privileges.ts).
import { randomBytes } from 'node:crypto';
import type { EngineName } from '../engines/engine.ts';
import { mysqlReaderStatements } from '../engines/mysql/mysql-privileges.ts';
import { postgresReaderStatements } from '../engines/postgres/postgres-privileges.ts';
import { DbqError, InvalidRequestError } from '../errors.ts';
import type { Services } from '../services.ts';
import { toEngineConfig, type ReaderCredentials } from './connections.ts';
import type { ConnectionFields } from './connection-url.ts';

type Statements = { create: string[]; undo: string[] };

const READER_STATEMENTS: Partial<Record<EngineName, (user: string, password: string, database: string) => Statements>> = {
  postgres: (user, password) => postgresReaderStatements(user, password),
  mysql: mysqlReaderStatements,
};

const STATEMENT_TIMEOUT_MS = 15_000;
const NAME_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `dbq_reader_` and 12 random characters: unique across the server, no quoting needed. */
function readerName(): string {
  return `dbq_reader_${[...randomBytes(12)].map((b) => NAME_ALPHABET[b % NAME_ALPHABET.length]).join('')}`;
}

function statementsFor(fields: ConnectionFields, user: string, password: string): Statements {
  const build = READER_STATEMENTS[fields.engine];
  if (!build) throw new InvalidRequestError(`${fields.engine} connections take no reader credentials`, { field: 'createReader' });
  return build(user, password, fields.database);
}

/** Runs statements with the connection's own credentials on an engine of its own (one
 * connection, closed after), not the connection's pool. */
async function runAsAdmin(svc: Services, fields: ConnectionFields, statements: string[], stopAtFailure: boolean): Promise<void> {
  const timeoutMs = svc.config.connectionTestTimeoutMs;
  const engine = svc.createEngine(
    // Reader logins are for servers with logins: no SQLite file is ever opened here.
    toEngineConfig(fields, { sqliteWorkspaceDir: null, maxConnections: 1, acquireTimeoutMs: timeoutMs, connectTimeoutMs: timeoutMs }),
  );
  try {
    for (const sql of statements) {
      const done = engine.execute({ sql, params: [], readOnly: false, timeoutMs: STATEMENT_TIMEOUT_MS, maxRows: 1, maxBytes: 1 << 16 });
      if (stopAtFailure) await done;
      else await done.catch(() => {});
    }
  } finally {
    await engine.close().catch(() => {});
  }
}

/** Creates the login; on a refusal nothing is left behind. A refusal by the database (the
 * connection's user may not create roles) is a 400 naming createReader, its message scrubbed
 * of the new password. */
export async function createReaderLogin(svc: Services, fields: ConnectionFields): Promise<ReaderCredentials & { password: string }> {
  const user = readerName();
  const password = randomBytes(24).toString('base64url');
  const { create, undo } = statementsFor(fields, user, password);
  try {
    await runAsAdmin(svc, fields, create, true);
  } catch (err) {
    await runAsAdmin(svc, fields, undo, false).catch(() => {});
    if (err instanceof DbqError && err.code === 'query_failed') {
      const reason = err.message.split(password).join('…');
      throw new InvalidRequestError(`could not create a reader login with the connection's credentials: ${reason}`, {
        field: 'createReader',
      });
    }
    throw err;
  }
  return { user, password };
}

/** Drops a login createReaderLogin made, when what it was made for failed. Best effort. */
export async function dropReaderLogin(svc: Services, fields: ConnectionFields, user: string): Promise<void> {
  await runAsAdmin(svc, fields, statementsFor(fields, user, 'x').undo, false).catch(() => {});
}
