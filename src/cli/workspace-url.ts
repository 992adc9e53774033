// Where a workspace's web pages are, as the CLI can tell from the configuration (it has no
// request to read a host from): the host form with DBQ_BASE_DOMAIN, else DBQ_HOST:DBQ_PORT
// with `default` at the root and others under /w/<slug>.
import type { Config } from '../config.ts';

export function workspaceWebUrl(config: Config, slug: string): string {
  if (config.baseDomain) return `https://${slug}.${config.baseDomain}`;
  const host = ['127.0.0.1', '0.0.0.0', '::', '::1'].includes(config.host) ? 'localhost' : config.host;
  return `http://${host}:${config.port}${slug === 'default' ? '' : `/w/${slug}`}`;
}
