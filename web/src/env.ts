// What the server told this page (the <meta> tags src/console/shell.ts injects).
function meta(name: string): string {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
}

export const PAGE = meta('dbq-page') || 'not-found';
/** "" at the root (workspace default or host form), "/w/{slug}" in the path form. */
export const BASE = meta('dbq-base');
export const WORKSPACE = meta('dbq-workspace');
export const STATUS = Number(meta('dbq-status') || '200');

export function href(path: string): string {
  return `${BASE}${path}`;
}
