// Where a workspace's single sign-on comes back to. The identity provider compares the
// redirect URI byte for byte with the one registered there, so every door names the same one:
// DBQ_PUBLIC_URL when set (every process of a deployment agrees), else the address the
// request came to (with DBQ_TRUST_PROXY behind a proxy).
import type { Config } from '../config.ts';

export const CALLBACK_PATH = '/sso/callback';

export interface RequestAddress {
  /** `http` or `https`, as Fastify reads it (X-Forwarded-Proto with DBQ_TRUST_PROXY). */
  protocol: string;
  /** Host with port, as Fastify reads it. */
  host: string;
  /** True when the request named the workspace in its path (`/w/{slug}/…`). */
  pathForm: boolean;
}

export function workspaceUrlOf(config: Pick<Config, 'publicUrl'>, slug: string, at: RequestAddress): string {
  if (config.publicUrl) return `${config.publicUrl}${slug === 'default' ? '' : `/w/${slug}`}`;
  return `${at.protocol}://${at.host}${at.pathForm ? `/w/${slug}` : ''}`;
}

export function redirectUriOf(config: Pick<Config, 'publicUrl'>, slug: string, at: RequestAddress): string {
  return `${workspaceUrlOf(config, slug, at)}${CALLBACK_PATH}`;
}
