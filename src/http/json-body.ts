// The JSON body parser, in place of Fastify's: the same parse, and the same refusal of keys that
// could poison prototypes later (`__proto__`, `constructor.prototype`), but a refused key is
// named as such (400 invalid_request) instead of being reported as "Invalid JSON body", which
// sent people looking for a syntax error in valid JSON.
import type { FastifyInstance } from 'fastify';
import { InvalidJsonError, InvalidRequestError } from '../errors.ts';

/** Where in `value` a forbidden key sits, as `params[0].__proto__`, or null. Iterative: bodies
 * nested thousands of levels deep must not overflow the stack. */
export function forbiddenKeyPath(value: unknown): string | null {
  const stack: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ value: v[i], path: `${path}[${i}]` });
      continue;
    }
    for (const key of Object.keys(v)) {
      const child = (v as Record<string, unknown>)[key];
      const childPath = path ? `${path}.${key}` : key;
      if (key === '__proto__') return childPath;
      if (key === 'constructor' && child !== null && typeof child === 'object' && Object.prototype.hasOwnProperty.call(child, 'prototype')) {
        return `${childPath}.prototype`;
      }
      stack.push({ value: child, path: childPath });
    }
  }
  return null;
}

export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    let text = body as string;
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      done(new InvalidJsonError(), undefined);
      return;
    }
    // Only text that can spell the key (directly or with \u escapes) is walked.
    if (value !== null && typeof value === 'object' && /proto|constructor|\\u/.test(text)) {
      const path = forbiddenKeyPath(value);
      if (path) {
        const key = path.endsWith('.prototype') ? 'constructor.prototype' : '__proto__';
        done(new InvalidRequestError(`Invalid request: a "${key}" key is not allowed (${path})`, { field: path }), undefined);
        return;
      }
    }
    done(null, value);
  });
}
