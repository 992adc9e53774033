// The typed parameters of a curated tool (src/tools/tools.ts): how an admin declares them,
// how a caller's values are checked against them, and the JSON Schema an MCP client (or any
// program) is shown. One definition feeds all three so the schema a model reads and the check
// a run passes cannot disagree. Values are checked here and then bound by the driver
// (tool-sql.ts); none is ever spliced into SQL text. A `pattern` is never run as a JavaScript
// RegExp here: it is compiled and matched with RE2 on the pattern worker (pattern-match.ts).
import { z } from 'zod';
import { InvalidRequestError } from '../errors.ts';
import { matchPattern, patternDefinitionProblem } from '../access/pattern-match.ts';

export const PARAMETER_TYPES = ['string', 'integer', 'number', 'boolean', 'date', 'enum', 'array'] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];
export type ItemType = Exclude<ParameterType, 'array'>;

/** What an array's elements are: a parameter without name, required or default. */
export interface ItemSpec {
  type: ItemType;
  values?: (string | number)[];
  min?: number | string;
  max?: number | string;
  maxLength?: number;
  pattern?: string;
}

export interface ToolParameter extends Omit<ItemSpec, 'type'> {
  name: string;
  type: ParameterType;
  description?: string;
  required?: boolean;
  default?: unknown;
  /** type array: the element type and its constraints. */
  items?: ItemSpec;
}

/** A parameter name: usable as `:name` in SQL. `caller` is taken by the caller-bound names. */
const PARAMETER_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Bound from the caller, never from the request. */
export const CALLER_NAMES = ['caller.email', 'caller.userId', 'caller.keyId'] as const;
/** The most elements an array parameter takes when its definition sets no max. */
const MAX_ARRAY_ITEMS = 1000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

const bound = z.union([z.number(), z.string().max(100)]);
const constraintShape = {
  values: z
    .array(z.union([z.string().max(1000), z.number()]))
    .min(1)
    .max(1000)
    .optional(),
  min: bound.optional(),
  max: bound.optional(),
  maxLength: z.number().int().min(1).max(1_000_000).optional(),
  pattern: z.string().min(1).max(1000).optional(),
};
const itemSchema = z
  .object({ type: z.enum(PARAMETER_TYPES.filter((t) => t !== 'array') as [ItemType, ...ItemType[]]), ...constraintShape })
  .strict();

const parameterSchema = z
  .object({
    name: z.string().regex(PARAMETER_NAME, 'must be lower-case letters, digits and _, starting with a letter or _'),
    type: z.enum(PARAMETER_TYPES),
    description: z.string().max(1000).optional(),
    required: z.boolean().optional(),
    default: z.unknown().optional(),
    items: itemSchema.optional(),
    ...constraintShape,
  })
  .strict();

export const parametersSchema = z.array(parameterSchema).max(50);

/** Whether a date string names a real day (2025-02-30 does not). */
function isRealDate(s: string): boolean {
  if (!DATE.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

/** Problems in one definition (type-specific constraints), as [field suffix, message]. */
function specProblem(spec: ItemSpec): [string, string] | null {
  const { type } = spec;
  const numeric = type === 'integer' || type === 'number';
  if (spec.values !== undefined && type !== 'enum') return ['values', 'is only for type enum'];
  if (type === 'enum' && spec.values === undefined) return ['values', 'is required for type enum'];
  if ((spec.maxLength !== undefined || spec.pattern !== undefined) && type !== 'string') {
    return [spec.maxLength !== undefined ? 'maxLength' : 'pattern', 'is only for type string'];
  }
  for (const key of ['min', 'max'] as const) {
    const v = spec[key];
    if (v === undefined) continue;
    if (numeric && typeof v !== 'number') return [key, 'must be a number'];
    if (type === 'integer' && !Number.isSafeInteger(v)) return [key, 'must be an integer'];
    if (type === 'date' && (typeof v !== 'string' || !isRealDate(v))) return [key, 'must be a date (yyyy-mm-dd)'];
    if (!numeric && type !== 'date') return [key, `is not a constraint of type ${type}`];
  }
  if (spec.min !== undefined && spec.max !== undefined && spec.min > spec.max) return ['min', 'is greater than max'];
  return null;
}

/** specProblem, then the pattern (compiled on the pattern worker). */
async function specProblemWithPattern(spec: ItemSpec): Promise<[string, string] | null> {
  const problem = specProblem(spec);
  if (problem || spec.pattern === undefined) return problem;
  const patternProblem = await patternDefinitionProblem(spec.pattern);
  return patternProblem ? ['pattern', patternProblem] : null;
}

/** Checks a list of definitions beyond their shape; throws 400 naming the field. */
export async function checkParameters(parameters: ToolParameter[]): Promise<void> {
  const seen = new Set<string>();
  for (const [i, p] of parameters.entries()) {
    const at = `parameters[${i}]`;
    if (p.name === 'caller')
      throw new InvalidRequestError(`${at}.name "caller" is reserved for :caller.email, :caller.userId and :caller.keyId`, {
        field: `${at}.name`,
      });
    if (seen.has(p.name)) throw new InvalidRequestError(`${at}.name "${p.name}" is declared twice`, { field: `${at}.name` });
    seen.add(p.name);
    if (p.type === 'array') {
      if (!p.items) throw new InvalidRequestError(`${at}.items is required for type array`, { field: `${at}.items` });
      const problem = await specProblemWithPattern(p.items);
      if (problem) throw new InvalidRequestError(`${at}.items.${problem[0]} ${problem[1]}`, { field: `${at}.items.${problem[0]}` });
      for (const key of ['min', 'max'] as const) {
        const v = p[key];
        if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_ARRAY_ITEMS)) {
          throw new InvalidRequestError(`${at}.${key} of an array counts its elements: an integer 0-${MAX_ARRAY_ITEMS}`, {
            field: `${at}.${key}`,
          });
        }
      }
      for (const key of ['values', 'maxLength', 'pattern'] as const) {
        if (p[key] !== undefined) throw new InvalidRequestError(`${at}.${key} of an array belongs in items`, { field: `${at}.${key}` });
      }
    } else {
      if (p.items !== undefined) throw new InvalidRequestError(`${at}.items is only for type array`, { field: `${at}.items` });
      const problem = await specProblemWithPattern(p as ItemSpec);
      if (problem) throw new InvalidRequestError(`${at}.${problem[0]} ${problem[1]}`, { field: `${at}.${problem[0]}` });
    }
    if (p.default !== undefined) {
      if (p.required) throw new InvalidRequestError(`${at}.default makes no sense on a required parameter`, { field: `${at}.default` });
      const problem = await valueProblem(p, p.default);
      if (problem) throw new InvalidRequestError(`${at}.default ${problem}`, { field: `${at}.default` });
    }
  }
}

/** Why a value does not fit one scalar spec, or null; `pattern` is checked by valueProblem. */
function scalarProblem(spec: ItemSpec, value: unknown): string | null {
  switch (spec.type) {
    case 'string':
      if (typeof value !== 'string') return 'must be a string';
      if (spec.maxLength !== undefined && [...value].length > spec.maxLength) return `must be at most ${spec.maxLength} characters`;
      return null;
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) return 'must be an integer';
      return rangeProblem(spec, value);
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
      return rangeProblem(spec, value);
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'date':
      if (typeof value !== 'string' || !isRealDate(value)) return 'must be a date (yyyy-mm-dd)';
      return rangeProblem(spec, value);
    case 'enum':
      return spec.values!.includes(value as string | number)
        ? null
        : `must be one of ${spec.values!.map((v) => JSON.stringify(v)).join(', ')}`;
  }
}

function rangeProblem(spec: ItemSpec, value: number | string): string | null {
  if (spec.min !== undefined && value < spec.min) return `must be at least ${spec.min}`;
  if (spec.max !== undefined && value > spec.max) return `must be at most ${spec.max}`;
  return null;
}

/** Why a value does not fit the parameter, or null. Every other check comes first, so a
 * value that is wrong anyway never reaches the pattern worker. */
async function valueProblem(p: ToolParameter, value: unknown): Promise<string | null> {
  if (p.type !== 'array') {
    const problem = scalarProblem(p as ItemSpec, value);
    if (problem || p.pattern === undefined) return problem;
    const outcome = await matchPattern(p.pattern, [value as string]);
    return outcome.kind === 'matched' ? null : outcome.kind === 'mismatch' ? `must match the pattern ${p.pattern}` : outcome.problem;
  }
  if (!Array.isArray(value)) return 'must be an array';
  const max = typeof p.max === 'number' ? p.max : MAX_ARRAY_ITEMS;
  if (typeof p.min === 'number' && value.length < p.min) return `must have at least ${p.min} elements`;
  if (value.length > max) return `must have at most ${max} elements`;
  for (let i = 0; i < value.length; i++) {
    const problem = scalarProblem(p.items!, value[i]);
    if (problem) return `[${i}] ${problem}`;
  }
  const pattern = p.items!.pattern;
  if (pattern === undefined || value.length === 0) return null;
  // One job for all elements: the work cap counts the whole array.
  const outcome = await matchPattern(pattern, value as string[]);
  return outcome.kind === 'matched'
    ? null
    : outcome.kind === 'mismatch'
      ? `[${outcome.index}] must match the pattern ${pattern}`
      : outcome.problem;
}

/** A caller's `params` object checked against the definitions: each value, defaults applied,
 * an absent optional parameter bound as NULL. 400 naming `params.<name>` otherwise. */
export async function resolveParamValues(parameters: ToolParameter[], given: unknown): Promise<Map<string, unknown>> {
  if (given === undefined || given === null) given = {};
  if (typeof given !== 'object' || Array.isArray(given))
    throw new InvalidRequestError('params must be an object of parameter values', { field: 'params' });
  const input = given as Record<string, unknown>;
  const declared = new Map(parameters.map((p) => [p.name, p]));
  for (const key of Object.keys(input)) {
    if (key === 'caller' || key.startsWith('caller.')) {
      throw new InvalidRequestError(`params.${key}: caller values are bound from the caller and cannot be passed`, {
        field: `params.${key}`,
      });
    }
    if (!declared.has(key)) throw new InvalidRequestError(`params.${key} is not a parameter of this tool`, { field: `params.${key}` });
  }
  const values = new Map<string, unknown>();
  for (const p of parameters) {
    const has = Object.hasOwn(input, p.name) && input[p.name] !== undefined;
    if (!has) {
      if (p.required) throw new InvalidRequestError(`params.${p.name} is required`, { field: `params.${p.name}` });
      values.set(p.name, p.default ?? null);
      continue;
    }
    const value = input[p.name];
    // null stands for "not given" on an optional parameter (models often send it).
    if (value === null && !p.required) {
      values.set(p.name, p.default ?? null);
      continue;
    }
    const problem = await valueProblem(p, value);
    if (problem) throw new InvalidRequestError(`params.${p.name} ${problem}`, { field: `params.${p.name}` });
    values.set(p.name, value);
  }
  return values;
}

function specJsonSchema(spec: ItemSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  switch (spec.type) {
    case 'string':
      out.type = 'string';
      if (spec.maxLength !== undefined) out.maxLength = spec.maxLength;
      if (spec.pattern !== undefined) out.pattern = spec.pattern;
      break;
    case 'integer':
    case 'number':
      out.type = spec.type;
      if (spec.min !== undefined) out.minimum = spec.min;
      if (spec.max !== undefined) out.maximum = spec.max;
      break;
    case 'boolean':
      out.type = 'boolean';
      break;
    case 'date':
      out.type = 'string';
      out.format = 'date';
      if (spec.min !== undefined) out.formatMinimum = spec.min;
      if (spec.max !== undefined) out.formatMaximum = spec.max;
      break;
    case 'enum':
      out.enum = spec.values;
      break;
  }
  return out;
}

/** The JSON Schema of a tool's `params` object (the MCP tool's inputSchema). */
export function paramsJsonSchema(parameters: ToolParameter[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const p of parameters) {
    const prop: Record<string, unknown> =
      p.type === 'array'
        ? {
            type: 'array',
            items: specJsonSchema(p.items!),
            maxItems: typeof p.max === 'number' ? p.max : MAX_ARRAY_ITEMS,
            ...(typeof p.min === 'number' ? { minItems: p.min } : {}),
          }
        : specJsonSchema(p as ItemSpec);
    if (p.description !== undefined) prop.description = p.description;
    if (p.default !== undefined) prop.default = p.default;
    properties[p.name] = prop;
  }
  const required = parameters.filter((p) => p.required).map((p) => p.name);
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}
