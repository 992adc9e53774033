// How the MCP relay (relay.ts) uses Redis: its client settings, the key and channel names, and
// what travels under them (the session binding, the messages between a relaying process and a
// session's owner, and the rules they are accepted by). Kept apart so the caller's side
// (relay-call.ts) and the owner's side (relay-owner-side.ts) share one wire format with the relay.
import { Redis } from 'ioredis';
import type { Principal } from '../workspaces/api-keys.ts';
import type { McpTransportKind } from './sessions.ts';

/** What Redis says about a session (sealed). */
export interface Binding {
  owner: string;
  kind: McpTransportKind;
  workspaceSlug: string;
  keyId: string | null;
  keyHash: string;
  secret: string | null;
}

/** To an owner: a message for one of its sessions, the caller giving up, or a dead key. */
export type ToOwner =
  | {
      t: 'req';
      id: string;
      from: string;
      at: number;
      sessionId: string;
      kind: McpTransportKind;
      method: string;
      path: string;
      headers: Record<string, string>;
      body: unknown;
      principal: Principal;
    }
  | { t: 'abort'; id: string; from: string; at: number }
  | { t: 'close'; sessionId: string; keyHash: string; from: string; at: number };
export type RelayedRequest = Extract<ToOwner, { t: 'req' }>;

/** Back to the caller: the response head (and the whole body when it is small), body chunks,
 * the end, or that the session is not there (`gone`) or the owner failed (`fail`). */
export type ToCaller =
  | { t: 'head'; id: string; status: number; headers: Record<string, string>; body?: string; done: boolean }
  | { t: 'data'; id: string; chunk: string }
  | { t: 'end'; id: string }
  | { t: 'gone'; id: string }
  | { t: 'fail'; id: string };
export type Head = Extract<ToCaller, { t: 'head' }>;

/** A relayed request older than this (or from a clock this far ahead) is dropped. */
export const REPLAY_WINDOW_MS = 120_000;
/** Request headers the owner's transport reads; never the key (the principal travels sealed). */
export const FORWARDED_HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];

export function sessionKey(keyPrefix: string, id: string): string {
  return `${keyPrefix}:mcp:session:${id}`;
}

export function procChannel(keyPrefix: string, processId: string): string {
  return `${keyPrefix}:mcp:proc:${processId}`;
}

export function replyChannel(keyPrefix: string, processId: string): string {
  return `${keyPrefix}:mcp:reply:${processId}`;
}

/** Bound on one relay command; a hung Redis costs it once (relay.ts's breaker). */
export const COMMAND_TIMEOUT_MS = 2_000;

export function redisClient(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    // Fail fast while Redis is away (a relay then answers 404, local sessions are unaffected);
    // ioredis keeps reconnecting in the background.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}
