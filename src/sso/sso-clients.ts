// The identity provider of each workspace as openid-client sees it (its discovered metadata
// and our client there), kept between sign-ins. Discovery is a request to a server an admin
// named, so it is bounded: every call to the provider (discovery, then the token exchange
// with the same configuration) times out after `timeoutMs`, a failure is remembered for
// `failureMs` (a dead issuer costs the first sign-in the timeout, the following ones nothing),
// sign-ins starting together share one discovery, and a provider's answer is read up to
// `maxResponseBytes`.
//
// Production is strict: issuers must be https (openid-client refuses anything else). Only
// `insecureHttpForTests` — set by code, never by configuration — lets a test's provider on a
// loopback http port through (openid-client's allowInsecureRequests).
import * as oidc from 'openid-client';
import { SsoSignInError } from '../errors.ts';
import type { SsoClientSettings } from './sso-settings.ts';

export interface SsoClientOptions {
  timeoutMs?: number;
  /** How long a discovered configuration is reused before it is read again. */
  freshMs?: number;
  failureMs?: number;
  maxResponseBytes?: number;
  insecureHttpForTests?: boolean;
}

interface Entry {
  key: string;
  until: number;
  config: Promise<oidc.Configuration>;
}

const DEFAULTS = { timeoutMs: 5_000, freshMs: 10 * 60_000, failureMs: 30_000, maxResponseBytes: 1 << 20 };

export class SsoClients {
  readonly allowHttp: boolean;
  private readonly opts: typeof DEFAULTS;
  private readonly entries = new Map<string, Entry>();

  constructor(opts: SsoClientOptions = {}) {
    this.allowHttp = opts.insecureHttpForTests === true;
    this.opts = {
      timeoutMs: opts.timeoutMs ?? DEFAULTS.timeoutMs,
      freshMs: opts.freshMs ?? DEFAULTS.freshMs,
      failureMs: opts.failureMs ?? DEFAULTS.failureMs,
      maxResponseBytes: opts.maxResponseBytes ?? DEFAULTS.maxResponseBytes,
    };
  }

  /** The client configuration for these settings; SsoSignInError('unreachable') when the
   * issuer does not answer in time or answers something that is not OIDC metadata. */
  async configurationFor(s: SsoClientSettings): Promise<oidc.Configuration> {
    // updatedAt moves with every change of the settings (the secret included).
    const key = `${s.issuer}\n${s.clientId}\n${s.updatedAt}`;
    const now = Date.now();
    const cached = this.entries.get(s.workspaceId);
    if (cached && cached.key === key && cached.until > now) return cached.config;
    const entry: Entry = { key, until: now + this.opts.freshMs, config: this.discover(s) };
    this.entries.set(s.workspaceId, entry);
    entry.config.catch(() => {
      if (this.entries.get(s.workspaceId) === entry) entry.until = Date.now() + this.opts.failureMs;
    });
    return entry.config;
  }

  /** Drops what was discovered for a workspace (its settings changed or were removed). */
  forget(workspaceId: string): void {
    this.entries.delete(workspaceId);
  }

  private async discover(s: SsoClientSettings): Promise<oidc.Configuration> {
    const timeoutSeconds = this.opts.timeoutMs / 1000;
    let timer: NodeJS.Timeout | undefined;
    // openid-client aborts its own request after `timeout`; this deadline also covers reading
    // a body that trickles in, and whatever else the library might wait on.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
    });
    try {
      return await Promise.race([
        oidc.discovery(new URL(s.issuer), s.clientId, { client_secret: s.clientSecret }, oidc.ClientSecretPost(s.clientSecret), {
          timeout: timeoutSeconds,
          [oidc.customFetch]: boundedFetch(this.opts.maxResponseBytes),
          ...(this.allowHttp ? { execute: [oidc.allowInsecureRequests] } : {}),
        }),
        deadline,
      ]);
    } catch (err) {
      throw new SsoSignInError(
        'unreachable',
        `The identity provider at ${s.issuer} could not be reached or did not answer as OIDC: ${reason(err)}`,
        err,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

function reason(err: unknown): string {
  const e = err as { message?: string; cause?: { message?: string; code?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

/** fetch whose response body is read whole but never past `max` bytes. */
function boundedFetch(max: number): oidc.CustomFetch {
  return async (url, options) => {
    const res = await fetch(url, options as RequestInit);
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > max) {
      await res.body?.cancel();
      throw new Error(`the answer of ${new URL(url).host} is larger than ${max} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > max) {
          await reader.cancel();
          throw new Error(`the answer of ${new URL(url).host} is larger than ${max} bytes`);
        }
        chunks.push(value);
      }
    }
    const body = [204, 205, 304].includes(res.status) ? null : Buffer.concat(chunks);
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
