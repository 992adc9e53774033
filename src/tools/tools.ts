// Curated tools: a named, described statement on one connection with typed parameters and a
// row limit, defined by an admin and run by anyone who may use its connection — including a
// toolsOnly key that may run no raw SQL at all. Every front door (REST, web, CLI, MCP) calls
// these functions. A run goes through runQuery like any statement: the guard still decides
// (a read-only principal's run of a writing tool is refused), the values are bound by the
// driver, and the history entry names the tool and its version.
// Storage: one curated_tools row per version; an edit adds version n+1, a delete marks the
// newest version, and a later create of the same name continues the numbering.
import { z } from 'zod';
import { getConnectionRow, type StoredConnectionRow } from '../connections/connections.ts';
import { DEFAULT_STATEMENT_TIMEOUT_MS } from '../engines/engine.ts';
import { ConflictError, InvalidRequestError, QueryFailedError, ToolNotFoundError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { zodToInvalidRequest } from '../zod-error.ts';
import { decideStatement } from '../guard/decide.ts';
import { runQuery, type QueryResult, type RunOptions } from '../query/run.ts';
import type { Services } from '../services.ts';
import type { CuratedToolRow } from '../store/schema.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { inTransaction, recordAudit, type Actor } from '../audit/audit.ts';
import { getConnectionFor, userMayUse } from '../access/grants.ts';
import { assertAdmin, assertKeyAllowsTool, keyAllowsConnection, keyAllowsTool, TOOL_NAME } from '../access/scope.ts';
import { checkParameters, parametersSchema, paramsJsonSchema, resolveParamValues, type ToolParameter } from './tool-params.ts';
import { bindPlaceholders, checkPlaceholders, findPlaceholders } from './tool-sql.ts';

/** The MCP server's own tools: a curated tool may not shadow one. */
const BUILTIN_TOOL_NAMES = [
  'list_connections',
  'list_tables',
  'describe_table',
  'search_objects',
  'execute_query',
  'get_query_history',
  'generate_sql',
] as const;

/** The most rows a tool may return (the /query cap). */
const TOOL_MAX_ROWS = 10_000;

const toolFields = {
  description: z.string().trim().min(1).max(4000),
  connectionId: z.string().min(1).max(200).describe('Connection id (conn_…) or name; stored as the id'),
  sql: z.string().min(1).max(100_000).describe('One statement with :name placeholders (and :caller.email, :caller.userId, :caller.keyId)'),
  parameters: parametersSchema,
  maxRows: z.number().int().min(1).max(TOOL_MAX_ROWS),
};

export const createToolSchema = z
  .object({
    name: z.string().regex(TOOL_NAME, 'must be lower-case letters, digits and _, starting with a letter (at most 64)'),
    ...toolFields,
    parameters: toolFields.parameters.default([]),
    maxRows: toolFields.maxRows.default(1000),
  })
  .strict();
export type CreateToolInput = z.input<typeof createToolSchema>;

export const updateToolSchema = z.object(toolFields).partial().strict();
export type UpdateToolInput = z.input<typeof updateToolSchema>;

export const runToolSchema = z.object({ params: z.record(z.string(), z.unknown()).default({}) }).strict();

export interface ToolRecord {
  name: string;
  version: number;
  description: string;
  connectionId: string;
  parameters: ToolParameter[];
  maxRows: number;
  /** The JSON Schema of `params` (what MCP clients are shown). */
  inputSchema: Record<string, unknown>;
  /** Admins only: the statement shows the schema it reads, which a tool exists to hide. */
  sql?: string;
  createdAt: string;
  createdBy: string | null;
}

export type ToolRunResult = QueryResult & { tool: { name: string; version: number } };

/** Who changes tools: an admin's principal (REST, web), or the local operator (CLI). */
export type ToolAuthor = Principal | { operator: true; workspace: { id: string } };

function isOperator(author: ToolAuthor): author is { operator: true; workspace: { id: string } } {
  return 'operator' in author;
}

function isAdmin(p: Principal): boolean {
  return p.user.role === 'admin';
}

/** The CLI reads a file, not a request: its mistakes get the same 400 messages. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw zodToInvalidRequest(result.error);
  return result.data;
}

/** Admins define tools; a tools-only key may run them, not write SQL for them. */
export function guard(author: ToolAuthor): void {
  if (isOperator(author)) return;
  assertAdmin(author, 'defining curated tools needs an admin key');
}

function toRecord(row: CuratedToolRow, withSql: boolean): ToolRecord {
  const parameters = JSON.parse(row.parameters) as ToolParameter[];
  return {
    name: row.name,
    version: Number(row.version),
    description: row.description,
    connectionId: row.connection_id,
    parameters,
    maxRows: Number(row.max_rows),
    inputSchema: paramsJsonSchema(parameters),
    ...(withSql ? { sql: row.sql } : {}),
    createdAt: row.created_at,
    createdBy: row.created_by,
  };
}

/** The newest version of a name, deleted or not. */
async function newestRow(svc: Services, workspaceId: string, name: string): Promise<CuratedToolRow | undefined> {
  return svc.db
    .selectFrom('curated_tools')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The live (newest, not deleted) version of every tool of the workspace, by name. */
async function liveRows(svc: Services, workspaceId: string): Promise<CuratedToolRow[]> {
  const rows = await svc.db
    .selectFrom('curated_tools')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('name')
    .orderBy('version', 'desc')
    .execute();
  const newest = new Map<string, CuratedToolRow>();
  for (const r of rows) if (!newest.has(r.name)) newest.set(r.name, r);
  return [...newest.values()].filter((r) => r.deleted_at === null);
}

export async function resolveConnection(svc: Services, author: ToolAuthor, idOrName: string): Promise<StoredConnectionRow> {
  return isOperator(author) ? getConnectionRow(svc.db, author.workspace.id, idOrName) : getConnectionFor(svc, author, idOrName);
}

/** The definition must make sense before it is stored: parameters well formed, every
 * placeholder declared and every parameter used, and the statement one the connection's
 * guard accepts (not valid SQL → 422, refused outright → 400). */
export async function validateDefinition(
  svc: Services,
  row: StoredConnectionRow,
  sql: string,
  parameters: ToolParameter[],
): Promise<'read' | 'write'> {
  await checkParameters(parameters);
  const placeholders = findPlaceholders(sql, row.engine);
  checkPlaceholders(placeholders, parameters);
  const bound = bindPlaceholders(sql, row.engine, placeholders, new Map(parameters.map((p) => [p.name, p.type])), null);
  const verdict = await decideStatement(svc.readGuards.of(svc.pools.forRead(row)), bound.sql);
  if (verdict.kind === 'rejected') throw new InvalidRequestError(`sql: ${verdict.reason ?? 'Statement rejected'}`, { field: 'sql' });
  if (verdict.kind === 'invalid') throw new QueryFailedError(verdict.reason ?? 'syntax error', verdict.details);
  return verdict.kind;
}

function authorWorkspace(author: ToolAuthor): string {
  return author.workspace.id;
}

function authorId(author: ToolAuthor): string | null {
  return isOperator(author) ? null : author.user.id;
}

async function insertVersion(
  svc: Services,
  row: CuratedToolRow,
  actor: Actor,
  action: 'tool.created' | 'tool.updated',
  changes: Record<string, unknown>,
): Promise<void> {
  try {
    await inTransaction(svc.db, async (trx) => {
      await trx.insertInto('curated_tools').values(row).execute();
      await recordAudit(trx, {
        workspaceId: row.workspace_id,
        actor,
        action,
        target: { type: 'tool', id: row.id, name: row.name },
        changes,
      });
    });
  } catch (err) {
    // Two writers raced for the same version number: the unique index decided.
    const again = await newestRow(svc, row.workspace_id, row.name);
    if (again && Number(again.version) >= row.version)
      throw new ConflictError(`Tool ${row.name} was changed at the same time; try again`, { field: 'name' });
    throw err;
  }
  svc.toolChanges.announce(row.workspace_id);
}

export async function createTool(svc: Services, author: ToolAuthor, input: CreateToolInput, actor: Actor): Promise<ToolRecord> {
  guard(author);
  const parsed = parseOr400(createToolSchema, input);
  if ((BUILTIN_TOOL_NAMES as readonly string[]).includes(parsed.name)) {
    throw new ConflictError(`${parsed.name} is the name of a built-in MCP tool; choose another`, { field: 'name' });
  }
  const workspaceId = authorWorkspace(author);
  const previous = await newestRow(svc, workspaceId, parsed.name);
  if (previous && previous.deleted_at === null) throw new ConflictError(`A tool named ${parsed.name} already exists`, { field: 'name' });
  const connection = await resolveConnection(svc, author, parsed.connectionId);
  const parameters = parsed.parameters as ToolParameter[];
  await validateDefinition(svc, connection, parsed.sql, parameters);
  const row: CuratedToolRow = {
    id: newId('tool'),
    workspace_id: workspaceId,
    name: parsed.name,
    version: previous ? Number(previous.version) + 1 : 1,
    description: parsed.description,
    connection_id: connection.id,
    sql: parsed.sql,
    parameters: JSON.stringify(parameters),
    max_rows: parsed.maxRows,
    created_by: authorId(author),
    created_at: nowIso(),
    deleted_at: null,
  };
  await insertVersion(svc, row, actor, 'tool.created', {
    version: row.version,
    connectionId: row.connection_id,
    parameters: parameters.map((p) => p.name),
    maxRows: row.max_rows,
  });
  return toRecord(row, true);
}

export async function updateTool(
  svc: Services,
  author: ToolAuthor,
  name: string,
  input: UpdateToolInput,
  actor: Actor,
): Promise<ToolRecord> {
  guard(author);
  const parsed = parseOr400(updateToolSchema, input);
  const workspaceId = authorWorkspace(author);
  const current = await newestRow(svc, workspaceId, name);
  if (!current || current.deleted_at !== null) throw new ToolNotFoundError();
  const connection = await resolveConnection(svc, author, parsed.connectionId ?? current.connection_id);
  const next: CuratedToolRow = {
    ...current,
    id: newId('tool'),
    version: Number(current.version) + 1,
    description: parsed.description ?? current.description,
    connection_id: connection.id,
    sql: parsed.sql ?? current.sql,
    parameters: parsed.parameters ? JSON.stringify(parsed.parameters) : current.parameters,
    max_rows: parsed.maxRows ?? Number(current.max_rows),
    created_by: authorId(author),
    created_at: nowIso(),
    deleted_at: null,
  };
  const changed = (['description', 'connection_id', 'sql', 'parameters', 'max_rows'] as const).filter(
    (k) => String(next[k]) !== String(current[k]),
  );
  if (changed.length === 0) throw new InvalidRequestError('Nothing to change: give at least one field with a new value');
  await validateDefinition(svc, connection, next.sql, JSON.parse(next.parameters) as ToolParameter[]);
  const fieldNames = {
    description: 'description',
    connection_id: 'connectionId',
    sql: 'sql',
    parameters: 'parameters',
    max_rows: 'maxRows',
  } as const;
  await insertVersion(svc, next, actor, 'tool.updated', {
    fields: changed.map((k) => fieldNames[k]),
    version: next.version,
    previousVersion: Number(current.version),
  });
  return toRecord(next, true);
}

export async function deleteTool(svc: Services, author: ToolAuthor, name: string, actor: Actor): Promise<ToolRecord> {
  guard(author);
  const workspaceId = authorWorkspace(author);
  const current = await newestRow(svc, workspaceId, name);
  if (!current || current.deleted_at !== null) throw new ToolNotFoundError();
  const deletedAt = nowIso();
  await inTransaction(svc.db, async (trx) => {
    await trx
      .updateTable('curated_tools')
      .set({ deleted_at: deletedAt })
      .where('id', '=', current.id)
      .where('deleted_at', 'is', null)
      .execute();
    await recordAudit(trx, {
      workspaceId,
      actor,
      action: 'tool.deleted',
      target: { type: 'tool', id: current.id, name },
      changes: { version: Number(current.version) },
    });
  });
  svc.toolChanges.announce(workspaceId);
  return toRecord({ ...current, deleted_at: deletedAt }, true);
}

/** Whether the caller may see (and so run) a live tool: its user may use the connection and
 * its key's scope lists both the tool and the connection. */
async function visible(svc: Services, principal: Principal, row: CuratedToolRow, grantsEveryone: Map<string, number>): Promise<boolean> {
  if (!keyAllowsTool(principal, row.name) || !keyAllowsConnection(principal, row.connection_id)) return false;
  const everyone = grantsEveryone.get(row.connection_id);
  if (everyone === undefined) return false; // the connection is gone
  return userMayUse(svc, principal, { id: row.connection_id, grants_everyone: everyone });
}

async function connectionGrants(svc: Services, workspaceId: string): Promise<Map<string, number>> {
  const rows = await svc.db.selectFrom('connections').select(['id', 'grants_everyone']).where('workspace_id', '=', workspaceId).execute();
  return new Map(rows.map((r) => [r.id, Number(r.grants_everyone)]));
}

/** The tools the caller may run, sorted by name; the CLI operator sees all. */
export async function listTools(svc: Services, author: ToolAuthor): Promise<ToolRecord[]> {
  const rows = await liveRows(svc, authorWorkspace(author));
  if (isOperator(author)) return rows.map((r) => toRecord(r, true));
  const grants = await connectionGrants(svc, author.workspace.id);
  const out: ToolRecord[] = [];
  for (const r of rows) if (await visible(svc, author, r, grants)) out.push(toRecord(r, isAdmin(author)));
  return out;
}

/** One live tool. 404 when it does not exist or its connection is not the caller's to use;
 * 403 when the caller's key leaves it out. */
export async function getTool(svc: Services, principal: Principal, name: string): Promise<ToolRecord> {
  return toRecord(await liveRowFor(svc, principal, name), isAdmin(principal));
}

async function liveRowFor(svc: Services, principal: Principal, name: string): Promise<CuratedToolRow> {
  const row = TOOL_NAME.test(name) ? await newestRow(svc, principal.workspace.id, name) : undefined;
  if (!row || row.deleted_at !== null) throw new ToolNotFoundError();
  const grants = await connectionGrants(svc, principal.workspace.id);
  const everyone = grants.get(row.connection_id);
  if (everyone === undefined || !(await userMayUse(svc, principal, { id: row.connection_id, grants_everyone: everyone })))
    throw new ToolNotFoundError();
  assertKeyAllowsTool(principal, name);
  return row;
}

/** Runs a definition's statement once: the caller's `params` checked against its parameters
 * (400 naming `params.<name>`), the caller's own values bound from the principal, then runQuery
 * with the definition's row limit. A saved tool's run and the editor's try of a draft. */
export async function runDefinition(
  svc: Services,
  principal: Principal,
  definition: { connection: Pick<StoredConnectionRow, 'id' | 'engine'>; sql: string; parameters: ToolParameter[]; maxRows: number },
  params: unknown,
  opts: Pick<RunOptions, 'source' | 'signal' | 'controller' | 'admitted' | 'tool'>,
): Promise<QueryResult> {
  const { connection, sql, parameters } = definition;
  const values = await resolveParamValues(parameters, params);
  values.set('caller.email', principal.user.email);
  values.set('caller.userId', principal.user.id);
  values.set('caller.keyId', principal.apiKey?.id ?? null);
  const placeholders = findPlaceholders(sql, connection.engine);
  const bound = bindPlaceholders(sql, connection.engine, placeholders, new Map(parameters.map((p) => [p.name, p.type])), values);
  return runQuery(
    svc,
    principal,
    {
      connectionId: connection.id,
      sql: bound.sql,
      params: bound.params,
      maxRows: definition.maxRows,
      timeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS,
      rowFormat: 'arrays',
    },
    opts,
  );
}

/** Runs a tool with the caller's `params`: checked against the definition (400 naming
 * `params.<name>`), caller values bound from the principal, then runQuery. */
export async function runTool(
  svc: Services,
  principal: Principal,
  name: string,
  params: unknown,
  opts: Pick<RunOptions, 'source' | 'signal' | 'controller' | 'admitted'>,
): Promise<ToolRunResult> {
  const row = await liveRowFor(svc, principal, name);
  const connection = await getConnectionFor(svc, principal, row.connection_id);
  const tool = { name: row.name, version: Number(row.version) };
  const definition = { connection, sql: row.sql, parameters: JSON.parse(row.parameters) as ToolParameter[], maxRows: Number(row.max_rows) };
  const result = await runDefinition(svc, principal, definition, params, { ...opts, tool });
  return { ...result, tool };
}
