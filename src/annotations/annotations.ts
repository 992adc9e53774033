// A connection's business context: what its tables and columns mean (descriptions), the other
// words people use for them (synonyms), and example questions with the SQL that answers them.
// Admins write it (REST, web, CLI); everyone who may use the connection reads it, and so do
// the SQL generator and MCP's describe_table/search_objects. Stored like curated tools: one
// row per version, a PUT adds version n+1, and each change is audited in its transaction.
// A document must fit the connection: every table and column it names exists there, and every
// example's SQL is a read the connection's guard accepts — a bad example is refused with 400
// naming it, and nothing is stored.
import { z } from 'zod';
import type { SchemaTable } from '../engines/engine.ts';
import { ConflictError, InvalidRequestError, NotFoundError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { zodToInvalidRequest } from '../zod-error.ts';
import { decideStatement } from '../guard/decide.ts';
import type { Services } from '../services.ts';
import type { ConnectionAnnotationRow } from '../store/schema.ts';
import type { StoredConnectionRow } from '../connections/connections.ts';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { assertAdmin, assertRawAccess } from '../access/scope.ts';
import { getConnectionFor } from '../access/grants.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { TableNames } from './merge.ts';

export const MAX_DESCRIPTION = 2000;
export const MAX_SYNONYMS = 20;
export const MAX_EXAMPLES = 100;
const MAX_TABLES = 5000;
const MAX_COLUMNS = 2000;

const description = z.string().trim().max(MAX_DESCRIPTION).describe('What it means, in the words of the business');
const synonyms = z
  .array(z.string().trim().min(1).max(100))
  .max(MAX_SYNONYMS)
  .describe('Other words people use for it ("purchases" for orders)');

const columnNoteSchema = z.object({ description: description.optional(), synonyms: synonyms.optional() }).strict();
const tableNoteSchema = z
  .object({
    description: description.optional(),
    synonyms: synonyms.optional(),
    columns: z.record(z.string().min(1).max(200), columnNoteSchema).optional().describe('By column name'),
  })
  .strict();
export const exampleSchema = z
  .object({
    question: z.string().trim().min(1).max(1000),
    sql: z.string().trim().min(1).max(20_000).describe('A read that answers the question; checked by the connection’s read-only guard'),
  })
  .strict();

/** PUT's body, and the document GET returns beside its version. */
export const annotationsSchema = z
  .object({
    tables: z
      .record(z.string().min(1).max(400), tableNoteSchema)
      .default({})
      .describe('By table or view name ("schema.name" where the name is in several schemas)'),
    examples: z.array(exampleSchema).max(MAX_EXAMPLES).default([]).describe('Example questions and the SQL that answers each'),
  })
  .strict();

export type Annotations = z.output<typeof annotationsSchema>;
export type AnnotationExample = z.output<typeof exampleSchema>;
export type TableNote = z.output<typeof tableNoteSchema>;

export interface AnnotationsRecord extends Annotations {
  connectionId: string;
  /** 0 while the connection has never been annotated. */
  version: number;
  updatedAt: string | null;
  /** User id of the admin who saved this version; null from the CLI. */
  updatedBy: string | null;
}

/** Who changes annotations: an admin's principal (REST, web), or the local operator (CLI). */
export type AnnotationAuthor = Principal | { operator: true; workspace: { id: string }; connection: StoredConnectionRow };

const EMPTY: Annotations = { tables: {}, examples: [] };

/** The newest version of a connection's annotations, or null. */
export async function newestAnnotations(svc: Services, connectionId: string): Promise<ConnectionAnnotationRow | undefined> {
  return svc.db
    .selectFrom('connection_annotations')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The document in force for a connection (empty when none), with its version: what the SQL
 * generator and the MCP tools read. One indexed look-up. */
export async function annotationsOf(svc: Services, connectionId: string): Promise<{ version: number; annotations: Annotations }> {
  const row = await newestAnnotations(svc, connectionId);
  return row ? { version: Number(row.version), annotations: JSON.parse(row.body) as Annotations } : { version: 0, annotations: EMPTY };
}

function toRecord(connectionId: string, row: ConnectionAnnotationRow | undefined): AnnotationsRecord {
  if (!row) return { connectionId, version: 0, updatedAt: null, updatedBy: null, ...EMPTY };
  const body = JSON.parse(row.body) as Annotations;
  return {
    connectionId,
    version: Number(row.version),
    updatedAt: row.created_at,
    updatedBy: row.created_by,
    tables: body.tables,
    examples: body.examples,
  };
}

/** GET /connections/{id}/annotations: anyone who may use the connection with a key that may
 * see the schema. `version` reads an older version (404 when it never existed). */
export async function getAnnotations(svc: Services, principal: Principal, idOrName: string, version?: number): Promise<AnnotationsRecord> {
  // Names and example SQL describe the schema, which a tools-only key exists not to see.
  assertRawAccess(principal);
  const row = await getConnectionFor(svc, principal, idOrName);
  if (version === undefined) return toRecord(row.id, await newestAnnotations(svc, row.id));
  const found = await svc.db
    .selectFrom('connection_annotations')
    .selectAll()
    .where('connection_id', '=', row.id)
    .where('version', '=', version)
    .executeTakeFirst();
  if (!found) throw new NotFoundError(`Version ${version} of these annotations does not exist`);
  return toRecord(row.id, found);
}

/** Every table and column the document names must exist on the connection. */
function checkNames(doc: Annotations, tables: SchemaTable[]): void {
  const keys = Object.keys(doc.tables);
  if (keys.length > MAX_TABLES) throw new InvalidRequestError(`tables: at most ${MAX_TABLES} tables`, { field: 'tables' });
  const names = new TableNames(tables);
  for (const key of keys) {
    const found = names.resolve(key);
    if (found === 'ambiguous') {
      throw new InvalidRequestError(`tables.${key}: the name is in several schemas; write it as "schema.${key}"`, {
        field: `tables.${key}`,
      });
    }
    if (!found)
      throw new InvalidRequestError(`tables.${key}: no table or view of that name on this connection`, { field: `tables.${key}` });
    const columns = Object.keys(doc.tables[key].columns ?? {});
    if (columns.length > MAX_COLUMNS)
      throw new InvalidRequestError(`tables.${key}.columns: at most ${MAX_COLUMNS}`, { field: `tables.${key}` });
    const existing = new Set(found.columns.map((c) => c.name));
    for (const column of columns) {
      if (!existing.has(column)) {
        throw new InvalidRequestError(`tables.${key}.columns.${column}: ${found.name} has no column of that name`, {
          field: `tables.${key}.columns.${column}`,
        });
      }
    }
  }
}

/** Every example must be a read the connection's guard accepts; the refusal names it. */
async function checkExamples(svc: Services, connection: StoredConnectionRow, examples: AnnotationExample[]): Promise<void> {
  const guard = svc.readGuards.of(svc.pools.forRead(connection));
  for (const [i, example] of examples.entries()) {
    const verdict = await decideStatement(guard, example.sql);
    if (verdict.kind === 'read') continue;
    const why =
      verdict.kind === 'write'
        ? `only read statements may be examples (got ${verdict.statementType})`
        : (verdict.reason ?? (verdict.kind === 'invalid' ? 'the database cannot compile it' : 'statement rejected'));
    throw new InvalidRequestError(`examples[${i}] ("${example.question.slice(0, 80)}"): ${why}`, {
      field: `examples[${i}]`,
      example: i,
      question: example.question,
    });
  }
}

function countColumns(doc: Annotations): number {
  return Object.values(doc.tables).reduce((n, t) => n + Object.keys(t.columns ?? {}).length, 0);
}

/** PUT /connections/{id}/annotations (admin), the web editor and `dbq connection annotate`:
 * replaces the document, as version n+1. */
export async function putAnnotations(
  svc: Services,
  author: AnnotationAuthor,
  idOrName: string,
  input: unknown,
  actor: Actor,
): Promise<AnnotationsRecord> {
  let connection: StoredConnectionRow;
  if ('operator' in author) connection = author.connection;
  else {
    assertAdmin(author, 'changing annotations needs an admin key');
    connection = await getConnectionFor(svc, author, idOrName);
  }
  const parsed = annotationsSchema.safeParse(input ?? {});
  if (!parsed.success) throw zodToInvalidRequest(parsed.error);
  const doc = parsed.data;
  checkNames(doc, await svc.pools.forRead(connection).listTables());
  await checkExamples(svc, connection, doc.examples);

  const previous = await newestAnnotations(svc, connection.id);
  const row: ConnectionAnnotationRow = {
    id: newId('ann'),
    workspace_id: connection.workspace_id,
    connection_id: connection.id,
    version: previous ? Number(previous.version) + 1 : 1,
    body: JSON.stringify(doc),
    created_by: 'operator' in author ? null : author.user.id,
    created_at: nowIso(),
  };
  try {
    await inTransaction(svc.db, async (trx) => {
      await trx.insertInto('connection_annotations').values(row).execute();
      await recordAudit(trx, {
        workspaceId: connection.workspace_id,
        actor,
        action: 'connection.annotations_changed',
        target: { type: 'connection', id: connection.id, name: connection.name },
        changes: {
          version: row.version,
          tables: Object.keys(doc.tables).length,
          columns: countColumns(doc),
          examples: doc.examples.length,
        },
      });
    });
  } catch (err) {
    // Two admins saved at once: the unique (connection, version) index decided.
    const again = await newestAnnotations(svc, connection.id);
    if (again && Number(again.version) >= row.version) {
      throw new ConflictError('These annotations were changed at the same time; reload and save again', { field: 'version' });
    }
    throw err;
  }
  return toRecord(connection.id, row);
}
