// POST /query/export: one statement streamed from a database cursor (engine.stream) as NDJSON,
// CSV or JSON. Same path as runQuery up to the engine (prepareQuery: connection, guard,
// permission), same value encoding (the engine's), one history entry. Rows are pulled only
// as fast as the consumer takes chunks (the HTTP layer pipes them into the socket, which
// waits for 'drain'), so a slow client holds the cursor back instead of filling memory.
//
// "First byte" is the first chunk this generator yields (Fastify sends the headers with it):
// anything that fails before is an ordinary error envelope with its status; after it, NDJSON
// ends with an error line and CSV/JSON are cut (the response is destroyed, so the client
// sees an incomplete transfer rather than a file that looks whole).
import { z } from 'zod';
import type { Column, RowStream } from '../engines/engine.ts';
import { linkedController } from '../engines/stop.ts';
import { DbqError, InternalError, InvalidRequestError, QueryCanceledError } from '../errors.ts';
import type { HistoryOutcome } from '../history/history.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import {
  announceWrite,
  historyErrorOf,
  openHistory,
  prepareQuery,
  queryInputShape,
  statementRanAfter,
  statusOf,
  trackRunning,
  type RunOptions,
} from './run.ts';

export const EXPORT_FORMATS = ['ndjson', 'csv', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Default and ceiling of an export's timeoutMs: it bounds the whole stream, not one fetch. */
const EXPORT_TIMEOUT_MS = 300_000;
/** Rows are gathered into chunks of about this many characters before they are handed on. */
const CHUNK_CHARS = 64 * 1024;

export const exportInputSchema = z
  .object({
    ...queryInputShape,
    // Default and ceiling: DBQ_EXPORT_MAX_ROWS (checked against the config in openExport).
    maxRows: z.number().int().min(1).optional(),
    timeoutMs: z.number().int().min(1).max(EXPORT_TIMEOUT_MS).default(EXPORT_TIMEOUT_MS),
    format: z.enum(EXPORT_FORMATS).default('ndjson'),
    // On by default: a CSV is a file for spreadsheets, where a stored `=HYPERLINK(…)` or DDE
    // payload would run when someone opens the export (CSV injection). Programs that need the
    // text exactly as stored turn it off, or use NDJSON/JSON, which it never touches.
    csvFormulaGuard: z
      .boolean()
      .default(true)
      .describe(
        "CSV only: a cell (or column name) beginning with =, +, -, @, tab or CR is written as a quoted field with a leading ' so spreadsheets show it as text instead of running it as a formula (OWASP CSV injection guard). Numbers, and text that is just a number such as -5, are left alone. false writes every value exactly as stored.",
      ),
  })
  .strict();
export type ExportInput = z.output<typeof exportInputSchema>;

export interface OpenedExport {
  queryId: string;
  format: ExportFormat;
  contentType: string;
  fileName: string;
  /** The body. Iterate to the end, or return() early (client gone): either way the cursor is
   * closed and the one history entry written. */
  chunks: AsyncGenerator<Buffer, void, undefined>;
}

const CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
  json: 'application/json; charset=utf-8',
};

/** Connection, guard, permission, then the cursor's first batch: everything that can fail
 * before the first byte fails here, as a normal error. */
export async function openExport(svc: Services, principal: Principal, input: ExportInput, opts: RunOptions): Promise<OpenedExport> {
  const maxRows = input.maxRows ?? svc.config.exportMaxRows;
  if (maxRows > svc.config.exportMaxRows) {
    throw new InvalidRequestError(`Invalid request: maxRows must be at most ${svc.config.exportMaxRows}`, { field: 'maxRows' });
  }
  const q = await prepareQuery(svc, principal, input, opts);
  const history = await openHistory(svc, q);
  const { controller, unlink } = linkedController(opts.signal);
  let settle: (err?: unknown) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(err));
  });
  trackRunning(svc, q, controller, done);

  let stream: RowStream;
  try {
    stream = await q.engine.stream!({
      sql: input.sql,
      params: input.params,
      readOnly: q.readOnly,
      ...q.runOptions,
      timeoutMs: input.timeoutMs,
      // One row past the limit tells whether the result was cut.
      maxRows: maxRows + 1,
      signal: controller.signal,
      deadline: q.deadline,
    });
  } catch (err) {
    unlink();
    settle(err);
    await history.finish(statusOf(err), { error: historyErrorOf(err) }, statementRanAfter(err));
    throw err;
  }

  const encoder = createEncoder(input.format, stream.columns, input.rowFormat, { csvFormulaGuard: input.csvFormulaGuard });
  const limits = {
    maxRows,
    maxBytes: svc.config.exportMaxBytes,
    // CSV has nowhere to say "truncated": a server cap cuts it like an error; a maxRows the
    // client chose itself ends it cleanly.
    clientChoseMaxRows: input.maxRows !== undefined,
  };

  async function* generate(): AsyncGenerator<Buffer, void, undefined> {
    const rows = stream.rows[Symbol.asyncIterator]();
    const chunk = new ChunkBuilder(limits.maxBytes);
    let rowCount = 0;
    let outcome: { status: HistoryOutcome['status']; error?: string } | null = null;
    let failure: unknown = null;
    try {
      chunk.add(encoder.head(), true);
      yield chunk.take();
      let cut: 'maxRows' | 'maxBytes' | null = null;
      for (;;) {
        let next: IteratorResult<unknown[]>;
        try {
          next = await rows.next();
        } catch (err) {
          failure = err;
          break;
        }
        if (next.done) break;
        if (rowCount >= limits.maxRows) {
          cut = 'maxRows';
          break;
        }
        if (!chunk.add(encoder.row(next.value, rowCount === 0))) {
          cut = 'maxBytes';
          break;
        }
        rowCount++;
        if (chunk.full) yield chunk.take();
      }
      if (cut) await rows.return?.();
      if (failure !== null) {
        // The client going away shows up here as the engine's QueryCanceledError.
        // `unknown`: whatever the row iterator threw, rethrown as it is.
        const err: unknown = controller.signal.aborted ? new QueryCanceledError() : failure;
        failure = err;
        outcome = { status: statusOf(err), error: historyErrorOf(err) };
        if (!(err instanceof DbqError)) svc.logger.error({ err, queryId: q.queryId }, 'export failed');
        // Nobody is left to read an error line when the client itself went away; a cancel
        // (POST /query/{id}/cancel, shutdown) still ends an NDJSON stream with one.
        if (input.format !== 'ndjson' || opts.signal?.aborted) throw err;
        chunk.add(encoder.error(err instanceof DbqError ? err : new InternalError(err)), true);
        yield chunk.take();
        return;
      }
      if (cut && input.format === 'csv' && !(cut === 'maxRows' && limits.clientChoseMaxRows)) {
        const err = new Error(`Export stopped at ${cut === 'maxRows' ? 'DBQ_EXPORT_MAX_ROWS' : 'DBQ_EXPORT_MAX_BYTES'}`);
        outcome = { status: 'failed', error: err.message };
        failure = err;
        throw err;
      }
      chunk.add(encoder.tail(rowCount, cut !== null), true);
      yield chunk.take();
      outcome = { status: 'succeeded' };
    } catch (err) {
      if (!outcome) {
        failure = err;
        outcome = { status: statusOf(err), error: historyErrorOf(err) };
        // A timeout, cancel or refused login is the database's or the client's doing: no stack.
        if (err instanceof DbqError && !(err instanceof InternalError))
          svc.logger[err.status < 500 ? 'info' : 'warn']({ code: err.code, status: err.status, queryId: q.queryId }, err.message);
        else svc.logger.error({ err, queryId: q.queryId }, 'export failed');
      }
      throw err;
    } finally {
      if (!outcome) {
        // return() at a yield: the consumer (the socket) went away mid-stream.
        failure = new QueryCanceledError();
        outcome = { status: 'canceled', error: (failure as QueryCanceledError).message };
        controller.abort();
      }
      // Closes the cursor and hands the connection back (no-op when already done).
      await rows.return?.().catch(() => {});
      unlink();
      // The response is under way: a store failure here can only be logged.
      await history
        .finish(outcome.status, { rowCount, error: outcome.error }, outcome.status === 'succeeded' ? true : statementRanAfter(failure))
        .catch((err: unknown) => svc.logger.error({ err, queryId: q.queryId }, 'history write failed'));
      if (outcome.status === 'succeeded') announceWrite(svc, q);
      svc.logger.info(
        { queryId: q.queryId, format: input.format, rows: rowCount, bytes: chunk.sent, status: outcome.status },
        'export finished',
      );
      if (outcome.status === 'succeeded') settle();
      else settle(failure);
    }
  }

  // Run the generator to its first yield now: a generator that never started ignores
  // return(), so a client gone before the first read would leave no history entry, and the
  // statement listed as running, for good.
  const body = generate();
  let head: IteratorResult<Buffer, void> | null = await body.next();
  const chunks: AsyncGenerator<Buffer, void, undefined> = {
    next: () => {
      if (!head) return body.next();
      const first = head;
      head = null;
      return Promise.resolve(first);
    },
    return: (value) => {
      head = null;
      return body.return(value);
    },
    throw: (err) => {
      head = null;
      return body.throw(err);
    },
    [Symbol.asyncIterator]() {
      return chunks;
    },
  } as AsyncGenerator<Buffer, void, undefined>;

  return {
    queryId: q.queryId,
    format: input.format,
    contentType: CONTENT_TYPES[input.format],
    fileName: `${q.queryId}.${input.format}`,
    chunks,
  };
}

/** Gathers encoded rows into ~64 KiB Buffers, counting UTF-8 bytes against the byte cap
 * without measuring every row: a row is at most 3 bytes per UTF-16 unit, so exact counting
 * starts only once the cap is within reach. */
class ChunkBuilder {
  /** Bytes handed out by take(). */
  sent = 0;
  private pieces: string[] = [];
  private chars = 0;
  /** Exact byte count of `pieces`, once near the cap; null before. */
  private exactBytes: number | null = null;
  private readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Adds `text` unless it would pass the cap (`force`: headers, trailers, error lines). */
  add(text: string, force = false): boolean {
    if (!force) {
      if (this.exactBytes === null && this.sent + (this.chars + text.length) * 3 > this.maxBytes) {
        this.exactBytes = Buffer.byteLength(this.pieces.join(''));
      }
      if (this.exactBytes !== null) {
        const size = Buffer.byteLength(text);
        if (this.sent + this.exactBytes + size > this.maxBytes) return false;
        this.exactBytes += size;
      }
    } else if (this.exactBytes !== null) {
      this.exactBytes += Buffer.byteLength(text);
    }
    this.pieces.push(text);
    this.chars += text.length;
    return true;
  }

  get full(): boolean {
    return this.chars >= CHUNK_CHARS;
  }

  take(): Buffer {
    const buf = Buffer.from(this.pieces.join(''), 'utf8');
    this.sent += buf.length;
    this.pieces = [];
    this.chars = 0;
    if (this.exactBytes !== null) this.exactBytes = 0;
    return buf;
  }
}

interface Encoder {
  head(): string;
  row(values: unknown[], first: boolean): string;
  /** After the last row; `truncated` when a limit stopped the export. */
  tail(rowCount: number, truncated: boolean): string;
  /** NDJSON only: the final line of a stream that failed after its first byte. */
  error(err: DbqError): string;
}

function createEncoder(
  format: ExportFormat,
  columns: Column[],
  rowFormat: 'arrays' | 'objects',
  opts: { csvFormulaGuard?: boolean } = {},
): Encoder {
  const names = columns.map((c) => c.name);
  const shape =
    rowFormat === 'objects'
      ? (values: unknown[]) => {
          const obj: Record<string, unknown> = {};
          for (let i = 0; i < names.length; i++) obj[names[i]] = values[i];
          return obj;
        }
      : (values: unknown[]) => values;
  const columnsJson = JSON.stringify(columns.map((c) => ({ name: c.name, type: c.type })));
  switch (format) {
    case 'ndjson':
      return {
        head: () => `{"columns":${columnsJson}}\n`,
        row: (values) => `${JSON.stringify(shape(values))}\n`,
        tail: (rowCount, truncated) => (truncated ? `${JSON.stringify({ truncated: true, rowCount })}\n` : ''),
        error: (err) => `${JSON.stringify(errorLine(err))}\n`,
      };
    case 'json':
      return {
        head: () => `{"columns":${columnsJson},"rows":[`,
        row: (values, first) => (first ? '' : ',') + JSON.stringify(shape(values)),
        tail: (rowCount, truncated) => (truncated ? `],"truncated":true,"rowCount":${rowCount}}\n` : ']}\n'),
        error: () => '',
      };
    case 'csv': {
      const field = opts.csvFormulaGuard ? guardedCsvField : csvField;
      const value = opts.csvFormulaGuard ? guardedCsvValue : csvValue;
      return {
        head: () => `${names.map(field).join(',')}\r\n`,
        row: (values) => `${values.map(value).join(',')}\r\n`,
        tail: () => '',
        error: () => '',
      };
    }
  }
}

function errorLine(err: DbqError): Record<string, unknown> {
  const line: Record<string, unknown> = { error: err.message, code: err.code };
  if (err.details && Object.keys(err.details).length > 0) line.details = err.details;
  return line;
}

const NEEDS_QUOTES = /[",\r\n]/;

/** RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled. */
function csvField(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;
/** Text that is only a number (`-5`, `+1.5e3`): spreadsheets read it as that number, not a formula. */
const PLAIN_NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** csvField with the OWASP guard: a formula-looking cell gets a leading `'` and is quoted
 * (quoting keeps a `,` or `"` inside the payload from starting a new cell). */
function guardedCsvField(text: string): string {
  if (!FORMULA_START.test(text) || PLAIN_NUMBER.test(text)) return csvField(text);
  return `"'${text.replaceAll('"', '""')}"`;
}

/** csvValue with the formula guard. Numbers never start a formula; int8 and numeric values,
 * which arrive as strings, are plain numbers and pass unchanged. */
function guardedCsvValue(value: unknown): string {
  if (typeof value === 'string') return value === '' ? '""' : guardedCsvField(value);
  if (typeof value === 'object' && value !== null) return guardedCsvField(JSON.stringify(value));
  return csvValue(value);
}

/** NULL is an empty field; an empty string is `""` (as PostgreSQL's COPY … CSV does), so the
 * two stay apart. JSON values and arrays are written as their JSON text. */
function csvValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value === '' ? '""' : csvField(value);
    case 'number':
      // Not String(value): V8 caches number-to-string results in a table that keeps every
      // recent string alive through a scavenge, so a million-row export promoted ~25 MiB of
      // garbage to the old generation and the process grew by that much.
      // JSON.stringify writes the same digits for every finite number without the cache.
      return Number.isFinite(value) ? JSON.stringify(value) : String(value);
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      return value === null ? '' : csvField(JSON.stringify(value));
    default:
      return '';
  }
}
