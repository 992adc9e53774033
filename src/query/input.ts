// The query request's fields, checked the same way at every front door (REST, MCP, the web
// console, async queries): zod for the shape, paramProblem for what a parameter may hold.
import { z } from 'zod';
import { DEFAULT_STATEMENT_TIMEOUT_MS } from '../engines/engine.ts';

/** How deep a JSON object or array inside an object parameter may nest (it is bound as JSON text). */
export const PARAM_OBJECT_DEPTH = 32;

/** Why a number cannot be bound as given, or null. JSON.parse has already turned `1e400` into
 * Infinity and `9007199254740993` into …992: every integer literal it could not keep exactly
 * lands at or beyond 2^53, so refusing unsafe integers catches each silent change. */
function numberProblem(n: number): string | null {
  if (!Number.isFinite(n)) return 'is not a finite number; pass it as a string';
  if (Number.isInteger(n) && !Number.isSafeInteger(n))
    return 'is an integer beyond ±(2^53-1) that JSON numbers cannot carry exactly; pass it as a string';
  return null;
}

/** Checks one parameter without recursion (a body nested 5,000 levels deep once overflowed the
 * stack in the driver, and at 3,000 levels the RangeError's text came back as the database's
 * message): a scalar, an array of scalars (a PostgreSQL array parameter), or a plain object
 * bound as JSON text and nested at most PARAM_OBJECT_DEPTH levels. Returns the problem and the
 * path below the parameter where it is. */
export function paramProblem(value: unknown): { path: (string | number)[]; message: string } | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') {
    const message = numberProblem(value);
    return message ? { path: [], message } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item === null || typeof item === 'string' || typeof item === 'boolean') continue;
      if (typeof item === 'number') {
        const message = numberProblem(item);
        if (message) return { path: [i], message };
        continue;
      }
      return { path: [i], message: 'must be a string, number, boolean or null (array parameters hold scalars only)' };
    }
    return null;
  }
  if (typeof value === 'object') {
    const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
    while (stack.length > 0) {
      const { value: v, path } = stack.pop()!;
      if (typeof v === 'number') {
        const message = numberProblem(v);
        if (message) return { path, message };
      } else if (v !== null && typeof v === 'object') {
        if (path.length >= PARAM_OBJECT_DEPTH) return { path, message: `nests deeper than ${PARAM_OBJECT_DEPTH} levels` };
        for (const [k, child] of Object.entries(v)) stack.push({ value: child, path: [...path, Array.isArray(v) ? Number(k) : k] });
      }
    }
    return null;
  }
  return { path: [], message: 'must be a string, number, boolean, null, an array of those, or an object' };
}

const paramsSchema = z
  .array(z.unknown())
  .max(10_000)
  .superRefine((params, ctx) => {
    for (let i = 0; i < params.length; i++) {
      const problem = paramProblem(params[i]);
      if (problem) {
        ctx.addIssue({ code: 'custom', path: [i, ...problem.path], message: problem.message });
        return;
      }
    }
  });

export const queryInputShape = {
  connectionId: z.string().min(1).max(200),
  sql: z.string().min(1),
  params: paramsSchema.default([]),
  maxRows: z.number().int().min(1).max(10_000).default(1000),
  timeoutMs: z.number().int().min(1).max(300_000).default(DEFAULT_STATEMENT_TIMEOUT_MS),
  rowFormat: z.enum(['arrays', 'objects']).default('arrays'),
};
export const queryInputSchema = z.object({ ...queryInputShape, async: z.boolean().optional() }).strict();
export type QueryInput = z.output<typeof queryInputSchema>;

const QUERY_INPUT_KEYS = new Set(['connectionId', 'sql', 'params', 'maxRows', 'timeoutMs', 'rowFormat', 'async']);

const intIn = (v: unknown, min: number, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

/** queryInputSchema's output for a body that plainly passes it, built by hand; null for anything
 * else, which zod then parses to give its own output or its own error. A request's zod parse cost
 * ~0.46 µs on the REST path; every rule here is the schema's, checked the same way. */
export function plainQueryInput(value: unknown): QueryInput | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) return null;
  const body = value as Record<string, unknown>;
  for (const key of Object.keys(body)) if (!QUERY_INPUT_KEYS.has(key) || body[key] === undefined) return null;
  const { connectionId, sql, params, maxRows, timeoutMs, rowFormat } = body;
  if (typeof connectionId !== 'string' || connectionId.length < 1 || connectionId.length > 200) return null;
  if (typeof sql !== 'string' || sql.length < 1) return null;
  if (params !== undefined) {
    if (!Array.isArray(params) || params.length > 10_000) return null;
    for (let i = 0; i < params.length; i++) if (paramProblem(params[i]) !== null) return null;
  }
  if (maxRows !== undefined && !intIn(maxRows, 1, 10_000)) return null;
  if (timeoutMs !== undefined && !intIn(timeoutMs, 1, 300_000)) return null;
  if (rowFormat !== undefined && rowFormat !== 'arrays' && rowFormat !== 'objects') return null;
  if ('async' in body && typeof body.async !== 'boolean') return null;
  const input: QueryInput = {
    connectionId,
    sql,
    params: params === undefined ? [] : [...(params as unknown[])],
    maxRows: maxRows === undefined ? 1000 : (maxRows as number),
    timeoutMs: timeoutMs === undefined ? DEFAULT_STATEMENT_TIMEOUT_MS : (timeoutMs as number),
    rowFormat: rowFormat === undefined ? 'arrays' : (rowFormat as 'arrays' | 'objects'),
  };
  if ('async' in body) input.async = body.async as boolean;
  return input;
}
