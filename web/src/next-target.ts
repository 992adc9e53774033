// Where the sign-in page goes once signed in: `?next=` only when it is a path of this
// workspace. Browsers drop tabs and newlines and read `\` as `/` before resolving a URL, so
// `/<TAB>/evil.example` is `//evil.example` to them; `next` is resolved the way they resolve it
// (WHATWG URL) and kept, normalised, only when it stays on this origin and under the
// workspace's path. The server's GET /login applies the same rule (src/console/routes/pages.ts).

export function safeNextTarget(next: string | null, origin: string, base: string): string {
  const home = `${base}/`;
  if (!next || !next.startsWith('/')) return home;
  try {
    const url = new URL(next, origin);
    const path = url.pathname;
    // `/.//evil.example` normalises to `//evil.example`: protocol-relative, another host.
    if (url.origin !== new URL(origin).origin || path.startsWith('//')) return home;
    if (base !== '' && path !== base && !path.startsWith(home)) return home;
    return `${path}${url.search}${url.hash}`;
  } catch {
    return home;
  }
}
