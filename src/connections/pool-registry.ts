// One engine (and so one bounded pool) per connection record, created lazily on first use.
// The record's updated_at is the fingerprint: an edit made by any process changes it, so the
// next request here closes the stale pool and opens one with the new settings.
import type { Engine, EngineConfig } from '../engines/engine.ts';
import type { ConnectionRow } from '../store/schema.ts';

interface Entry {
  fingerprint: string;
  engine: Engine;
}

export class PoolRegistry {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly createEngine: (config: EngineConfig) => Engine,
    private readonly configFor: (row: ConnectionRow) => EngineConfig,
  ) {}

  get(row: ConnectionRow): Engine {
    const entry = this.entries.get(row.id);
    if (entry && entry.fingerprint === row.updated_at) return entry.engine;
    if (entry) void entry.engine.close().catch(() => {});
    const engine = this.createEngine(this.configFor(row));
    this.entries.set(row.id, { fingerprint: row.updated_at, engine });
    return engine;
  }

  async drop(connectionId: string): Promise<void> {
    const entry = this.entries.get(connectionId);
    if (!entry) return;
    this.entries.delete(connectionId);
    await entry.engine.close();
  }

  async closeAll(): Promise<void> {
    const engines = [...this.entries.values()].map((e) => e.engine);
    this.entries.clear();
    await Promise.allSettled(engines.map((e) => e.close()));
  }
}
