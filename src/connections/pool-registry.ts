// One engine (and so one bounded pool) per connection record, created lazily on first use; a
// second one for reads when the record has reader credentials (forRead). The record's
// updated_at is the fingerprint: an edit made by any process changes it, so the next request
// here closes the stale pool and opens one with the new settings.
import type { Engine, EngineConfig } from '../engines/engine.ts';
import type { ConnectionRow } from '../store/schema.ts';

interface Entry {
  fingerprint: string;
  engine: Engine;
}

export class PoolRegistry {
  private readonly entries = new Map<string, Entry>();
  private readonly readers = new Map<string, Entry>();

  constructor(
    private readonly createEngine: (config: EngineConfig) => Engine,
    private readonly configFor: (row: ConnectionRow) => EngineConfig,
    /** The engine config of a record's reader credentials; called only for records that have them. */
    private readonly readConfigFor: (row: ConnectionRow) => EngineConfig = configFor,
  ) {}

  get(row: ConnectionRow): Engine {
    return this.engineIn(this.entries, row, this.configFor);
  }

  /** The engine every read uses (queries in read-only mode, schema introspection, AI
   * validation, exports, async reads): logged in with the reader credentials when the record
   * has them, else the same engine as get(row). */
  forRead(row: ConnectionRow): Engine {
    if (row.read_username) return this.engineIn(this.readers, row, this.readConfigFor);
    const stale = this.readers.get(row.id);
    if (stale) {
      // The reader credentials were removed (by any process): their pool goes too.
      this.readers.delete(row.id);
      void stale.engine.close().catch(() => {});
    }
    return this.get(row);
  }

  private engineIn(entries: Map<string, Entry>, row: ConnectionRow, configFor: (row: ConnectionRow) => EngineConfig): Engine {
    const entry = entries.get(row.id);
    if (entry && entry.fingerprint === row.updated_at) return entry.engine;
    if (entry) void entry.engine.close().catch(() => {});
    const engine = this.createEngine(configFor(row));
    entries.set(row.id, { fingerprint: row.updated_at, engine });
    return engine;
  }

  async drop(connectionId: string): Promise<void> {
    const engines = [this.entries, this.readers].flatMap((entries) => {
      const entry = entries.get(connectionId);
      entries.delete(connectionId);
      return entry ? [entry.engine] : [];
    });
    await Promise.all(engines.map((e) => e.close()));
  }

  async closeAll(): Promise<void> {
    const engines = [...this.entries.values(), ...this.readers.values()].map((e) => e.engine);
    this.entries.clear();
    this.readers.clear();
    await Promise.allSettled(engines.map((e) => e.close()));
  }
}
