// Entry point of the read-only guard: picks the dialect's parser-based classifier.
// Implemented in guard-postgres.ts (libpg-query), guard-mysql.ts and guard-sqlite.ts
// (node-sql-parser plus explicit rules). Deny by default: what cannot be parsed is not a read.
import type { EngineName } from '../engines/engine.ts';
import type { Verdict } from './verdict.ts';

export type { Verdict } from './verdict.ts';

export declare function classifyStatement(engine: EngineName, sql: string): Promise<Verdict>;
