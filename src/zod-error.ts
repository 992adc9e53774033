// A zod refusal as dbq's 400: the first issue, its field written as it appears in the body.
// Every door and core function that validates input with zod (curated tool parameters, MCP
// tool arguments, HTTP bodies) throws this, so the same mistake reads the same everywhere.
import { ZodError } from 'zod';
import { InvalidRequestError } from './errors.ts';

export function zodToInvalidRequest(err: ZodError): InvalidRequestError {
  const issue = err.issues[0];
  if (issue?.code === 'invalid_union') {
    // Zod's own message is a bare "Invalid input". When every alternative refused only keys
    // that another one takes (`connectionId` and `url` in one /connections/test body), the
    // keys cannot be given together; otherwise the closest alternative says what is wrong.
    const options = (issue as { errors?: ZodError['issues'][] }).errors ?? [];
    const keysOf = (o: ZodError['issues']) =>
      o.length === 1 && o[0].code === 'unrecognized_keys' ? ((o[0] as { keys?: string[] }).keys ?? []) : null;
    if (options.length > 1 && options.every((o) => keysOf(o) !== null)) {
      const keys = [...new Set(options.flatMap((o) => keysOf(o)!))].sort();
      const prefix = issue.path.length > 0 ? `${issue.path.join('.')}.` : '';
      return new InvalidRequestError(`Invalid request: ${keys.map((k) => `"${prefix}${k}"`).join(' and ')} cannot be given together`, {
        field: `${prefix}${keys[0]}`,
        fields: keys.map((k) => `${prefix}${k}`),
      });
    }
    const closest = [...options].sort((a, b) => a.length - b.length)[0];
    if (closest && closest.length > 0)
      return zodToInvalidRequest(new ZodError(closest.map((i) => ({ ...i, path: [...issue.path, ...i.path] }))));
  }
  // `params[3]`, `params[3][0]`: array positions read as they are written in the body.
  const field = (issue?.path ?? []).reduce<string>(
    (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${String(seg)}` : String(seg)),
    '',
  );
  let message = issue?.message ?? 'invalid value';
  if (issue?.code === 'unrecognized_keys') {
    const keys = (issue as { keys?: string[] }).keys ?? [];
    return new InvalidRequestError(`Invalid request: unknown field ${keys.map((k) => `"${k}"`).join(', ')}`, { field: keys[0] });
  }
  if (issue?.code === 'invalid_type' && /received undefined/.test(message)) message = 'is required';
  return new InvalidRequestError(
    field ? `Invalid request: ${field} ${message}` : `Invalid request: ${message}`,
    field ? { field } : undefined,
  );
}
