// What SQL generation keeps between requests, one per Services object (`svc.ai`, built by
// src/services.ts): the configured provider, made on first use, and the schema context of each
// connection. Contexts are cached for SCHEMA_TTL_MS, keyed by the record's updated_at (an
// edited connection is re-read), and dropped when a write runs through dbq on that connection
// (DDL changes what the generator may reference).
import type { Config } from '../config.ts';
import type { Engine } from '../engines/engine.ts';
import type { ConnectionRow } from '../store/schema.ts';
import type { SqlProvider } from './generate.ts';
import { createProvider } from './providers/index.ts';
import { buildSchemaContext, type SchemaContext } from './schema-context.ts';
import type { Annotations } from '../annotations/annotations.ts';
import { applyAnnotations } from '../annotations/merge.ts';

const SCHEMA_TTL_MS = 10 * 60_000;

export class AiState {
  private made: SqlProvider | null = null;
  private readonly schemas = new Map<string, { fingerprint: string; at: number; ctx: Promise<SchemaContext> }>();
  private readonly annotated = new Map<string, { base: SchemaContext; version: number; ctx: SchemaContext }>();

  /** `onWrite`: Services.onWrite, called after a write statement ran on a connection. */
  constructor(
    private readonly config: Config['ai'],
    onWrite: Set<(connectionId: string) => void>,
  ) {
    onWrite.add((connectionId) => {
      this.schemas.delete(connectionId);
      this.annotated.delete(connectionId);
    });
  }

  /** Made when first asked for: CLI commands open Services too and never generate. */
  get provider(): SqlProvider {
    this.made ??= createProvider({
      provider: this.config.provider,
      baseUrl: this.config.baseUrl ?? undefined,
      apiKey: this.config.apiKey ?? undefined,
      model: this.config.model ?? undefined,
      timeoutMs: this.config.timeoutMs,
    });
    return this.made;
  }

  /** The schema context with the connection's annotations applied (descriptions, synonyms,
   * examples). `version` is the annotations' version: the merged context is kept until either
   * it or the introspected context changes, so the builtin's index, keyed by the context
   * object, is built once per version. */
  async annotatedContext(row: ConnectionRow, engine: Engine, notes: { version: number; annotations: Annotations }): Promise<SchemaContext> {
    const base = await this.schemaContext(row, engine);
    if (notes.version === 0) return base;
    const kept = this.annotated.get(row.id);
    if (kept && kept.base === base && kept.version === notes.version) return kept.ctx;
    const ctx: SchemaContext = {
      ...base,
      tables: applyAnnotations(base.tables, notes.annotations),
      examples: notes.annotations.examples,
    };
    this.annotated.set(row.id, { base, version: notes.version, ctx });
    return ctx;
  }

  /** The schema context of a connection, introspected once and cached. */
  schemaContext(row: ConnectionRow, engine: Engine, refresh = false): Promise<SchemaContext> {
    const schemas = this.schemas;
    const cached = schemas.get(row.id);
    if (!refresh && cached && cached.fingerprint === row.updated_at && Date.now() - cached.at < SCHEMA_TTL_MS) return cached.ctx;
    const ctx = (async () => {
      const tables = await engine.listTables();
      // Sample reads are introspection, not user queries: read-only mode, short timeout, no history.
      const runRead = async (sql: string) =>
        (await engine.execute({ sql, params: [], readOnly: true, timeoutMs: 5000, maxRows: 100, maxBytes: 1 << 20 })).rows;
      return buildSchemaContext(row.engine, tables, runRead);
    })();
    schemas.set(row.id, { fingerprint: row.updated_at, at: Date.now(), ctx });
    ctx.catch(() => schemas.delete(row.id));
    return ctx;
  }
}
