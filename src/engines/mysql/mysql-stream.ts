// Row streaming for exports on MySQL/MariaDB. mysql2's Query.stream() does not exist for
// prepared statements, so backpressure is done on the connection itself: past HIGH_WATER
// buffered rows the socket is paused (the server blocks on send), and resumed once the
// consumer has taken the batch.

import type { FieldPacket } from 'mysql2';
import type { DbqError } from '../../errors.ts';
import type { RowStream, StreamOptions } from '../engine.ts';
import type { MysqlSession } from './mysql.ts';
import { createDecoder, mysqlTypeName, type Decoder } from './mysql-values.ts';
import { toMysqlParams } from './mysql-statement.ts';
import { createRowIterable } from '../row-stream.ts';

const HIGH_WATER = 500;
const DRAIN_AFTER_KILL_MS = 2_000;

export async function openStatementStream(
  session: MysqlSession,
  opts: StreamOptions,
  classify: (err: unknown) => DbqError,
): Promise<RowStream> {
  const { conn, watch } = session;
  const binary = opts.params.length > 0;
  const cmd = binary
    ? conn.execute({ sql: opts.sql, values: toMysqlParams(opts.params), rowsAsArray: true })
    : conn.query({ sql: opts.sql, rowsAsArray: true });
  let fields: FieldPacket[] | null = null;
  let decoders: Decoder[] = [];
  let buffer: unknown[][] = [];
  let ended = false;
  // Set by the 'error' listener; the cast keeps TypeScript from narrowing it to null below.
  let error = null as Error | null;
  let ignoreRest = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const waitForEvent = () => new Promise<void>((resolve) => (wake = resolve));

  cmd.on('fields', (f: FieldPacket[] | undefined) => {
    // An OK packet (a write) comes with fields undefined.
    if (!f) return;
    if (fields) ignoreRest = true;
    else {
      fields = f;
      decoders = f.map((field) => createDecoder(field, binary));
    }
    notify();
  });
  cmd.on('result', (row: unknown) => {
    if (!Array.isArray(row) || ignoreRest) return;
    buffer.push(row.map((value, i) => decoders[i](value)));
    if (buffer.length >= HIGH_WATER) conn.pause();
    notify();
  });
  cmd.on('error', (err: Error) => {
    error = err;
    ended = true;
    notify();
  });
  cmd.on('end', () => {
    ended = true;
    notify();
  });

  while (!fields && !ended) await watch.run(waitForEvent());
  if (watch.reason) throw watch.error();
  if (error) throw error;

  const columns = (fields ?? ([] as FieldPacket[])).map((f) => ({ name: f.name, type: mysqlTypeName(f) }));
  const { rows, abort } = createRowIterable(
    {
      pull: async () => {
        try {
          while (!buffer.length && !ended) await watch.run(waitForEvent());
          if (watch.reason) throw watch.error();
          if (error) throw error;
        } catch (err) {
          throw classify(err);
        }
        if (!buffer.length) return null;
        const batch = buffer;
        buffer = [];
        conn.resume();
        return batch;
      },
      cleanup: async () => {
        if (!ended) {
          // The consumer stopped early: stop the statement, then let the rest drain; a
          // connection that does not settle is dropped rather than reset.
          ignoreRest = true;
          session.kill();
          conn.resume();
          const deadline = Date.now() + DRAIN_AFTER_KILL_MS;
          while (!ended && Date.now() < deadline) {
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([waitForEvent(), new Promise((r) => (timer = setTimeout(r, deadline - Date.now())))]);
            clearTimeout(timer);
          }
          if (!ended) session.discard();
        }
        await session.end();
      },
    },
    opts.maxRows,
  );
  session.onAbandon = () => abort(watch.error());
  return { columns, rows };
}
