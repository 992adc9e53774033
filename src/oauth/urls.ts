// The public addresses of a workspace as an OAuth issuer and protected resource. Every process
// of a deployment must name the same ones, so they come from DBQ_PUBLIC_URL when it is set;
// else from the request (its protocol and host as Fastify reads them, DBQ_TRUST_PROXY applied).
// The workspace's URL keeps the form the request used: `/w/{slug}` in the path form, the
// origin itself at the root (workspace `default`, or `{slug}.{DBQ_BASE_DOMAIN}`).
import type { Config } from '../config.ts';

export type ResourceKind = 'mcp' | 'api';
export const RESOURCE_KINDS: readonly ResourceKind[] = ['mcp', 'api'];

/** What a URL is computed from: the request as the door sees it. */
export interface RequestPlace {
  protocol: string;
  /** Host header (with port), as Fastify's request.host. */
  host: string;
  /** The workspace addressed. */
  slug: string;
  /** Addressed as `/w/{slug}/…` (else at the root or by host). */
  pathForm: boolean;
}

export interface WorkspacePlace {
  /** `https://host` (no path). */
  origin: string;
  /** Path of the workspace under the origin: "" or "/w/{slug}", after DBQ_PUBLIC_URL's own path. */
  path: string;
  /** `{workspace_url}`: origin + path; the issuer. */
  url: string;
}

export function workspacePlace(config: Config, req: RequestPlace): WorkspacePlace {
  const under = req.pathForm ? `/w/${req.slug}` : '';
  let origin: string;
  let prefix = '';
  if (config.publicUrl) {
    const pub = new URL(config.publicUrl);
    prefix = pub.pathname.replace(/\/+$/, '');
    origin = pub.origin;
    // The host form keeps the workspace in the host name, on the public URL's scheme.
    if (!req.pathForm && config.baseDomain && req.slug !== 'default') origin = `${pub.protocol}//${req.slug}.${config.baseDomain}`;
  } else {
    origin = `${req.protocol}://${req.host}`.toLowerCase();
  }
  // `https://host:443` and `https://host` are one origin; the issuer must be spelled as the
  // library spells its endpoints (without the default port).
  try {
    origin = new URL(origin).origin;
  } catch {
    // a Host header no URL can hold: left as sent, it names nothing that works
  }
  const path = `${prefix}${under}`;
  return { origin, path, url: `${origin}${path}` };
}

export function resourceUrl(place: WorkspacePlace, kind: ResourceKind): string {
  return `${place.url}/${kind}`;
}

/** RFC 9728 §3.1: the well-known segment goes between the host and the resource's path. */
export function resourceMetadataUrl(place: WorkspacePlace, kind: ResourceKind): string {
  return `${place.origin}/.well-known/oauth-protected-resource${place.path}/${kind}`;
}

/** RFC 8414 §3.1: the same insertion for the issuer. */
export function authorizationServerMetadataUrl(place: WorkspacePlace): string {
  return `${place.origin}/.well-known/oauth-authorization-server${place.path}`;
}

/** RFC 9728 Protected Resource Metadata of one of the workspace's resources. */
export function protectedResourceMetadata(place: WorkspacePlace, kind: ResourceKind) {
  return {
    resource: resourceUrl(place, kind),
    authorization_servers: [place.url],
    scopes_supported: ['dbq:read', 'dbq:write', 'offline_access'],
    bearer_methods_supported: ['header'],
    resource_name: kind === 'mcp' ? 'dbq MCP server' : 'dbq REST API',
  };
}
