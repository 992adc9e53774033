// Where a workspace's web pages are, as the CLI can tell (it has no request to read a host
// from): DBQ_PUBLIC_URL; else the host form with DBQ_BASE_DOMAIN; else the address the last
// `dbq serve` of this data directory announced (a server on port 7200 gets links to 7200, not
// to the default 8080); else DBQ_HOST:DBQ_PORT. `default` is at the root, others under /w/<slug>.
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';

const RECORD = 'public-url';

/** `serve` notes where it listens, for the CLI run beside it; losing the note costs only a
 * link's host, so a write that fails is not an error. */
export function recordServeUrl(dataDir: string, url: string): void {
  try {
    fs.writeFileSync(path.join(dataDir, RECORD), `${url}\n`, { mode: 0o600 });
  } catch {
    // a read-only data dir: the CLI falls back to DBQ_HOST/DBQ_PORT
  }
}

function recordedServeUrl(dataDir: string): string | null {
  try {
    const url = fs.readFileSync(path.join(dataDir, RECORD), 'utf8').trim();
    return /^https?:\/\/\S+$/.test(url) ? url.replace(/\/+$/, '') : null;
  } catch {
    return null;
  }
}

export function workspaceWebUrl(config: Config, slug: string): string {
  const under = slug === 'default' ? '' : `/w/${slug}`;
  if (config.publicUrl) return `${config.publicUrl}${under}`;
  if (config.baseDomain) return `https://${slug}.${config.baseDomain}`;
  const recorded = recordedServeUrl(config.dataDir);
  if (recorded) return `${recorded}${under}`;
  const host = ['127.0.0.1', '0.0.0.0', '::', '::1'].includes(config.host) ? 'localhost' : config.host;
  return `http://${host}:${config.port}${under}`;
}
