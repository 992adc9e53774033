// What a failed request says to a person: the envelope's message plus the facts in `details`
// that explain a refusal (the guard's reason, the refused function or relation, the statement
// type). "Insufficient permissions" alone does not tell a newcomer what to change.
import { ApiError } from './api.ts';

const FACTS: [key: string, label: string][] = [
  ['function', 'function'],
  ['relation', 'relation'],
  ['table', 'table'],
  ['statementType', 'statement'],
];

export function errorText(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  const d = err.details ?? {};
  const parts: string[] = [];
  for (const key of ['reason', 'why'] as const) {
    const v = d[key];
    if (typeof v === 'string' && v && !err.message.includes(v) && !parts.includes(v)) parts.push(v);
  }
  const facts = FACTS.flatMap(([key, label]) => (typeof d[key] === 'string' && d[key] ? [`${label}: ${d[key] as string}`] : []));
  let text = err.message;
  if (parts.length) text += `: ${parts.join('; ')}`;
  if (facts.length) text += ` (${facts.join(', ')})`;
  return text;
}
