// fetch() wrapper for {workspace_url}/ui/api: JSON in and out, the session's CSRF token on
// every unsafe request, errors as ApiError carrying the envelope's message and code.
import { BASE, href } from './env.ts';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export interface Me {
  user: { id: string; email: string; role: 'admin' | 'read_only' };
  workspace: { slug: string };
  csrfToken: string;
}

let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export function loginUrl(): string {
  return `${href('/login')}?next=${encodeURIComponent(location.pathname + location.search)}`;
}

async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(`${BASE}/ui/api${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError('Could not reach the dbq server', 0, 'network_error');
  }
  let payload: { success?: boolean; data?: T; error?: string; code?: string; details?: Record<string, unknown> } = {};
  try {
    payload = await res.json();
  } catch {
    // a non-JSON answer (proxy error page): reported below with the status
  }
  if (res.ok && payload.success) return payload.data as T;
  throw new ApiError(payload.error ?? `Request failed (HTTP ${res.status})`, res.status, payload.code ?? 'http_error', payload.details);
}

export const api = {
  get: <T>(path: string, signal?: AbortSignal) => call<T>('GET', path, undefined, signal),
  post: <T>(path: string, body?: unknown, signal?: AbortSignal) => call<T>('POST', path, body ?? {}, signal),
  patch: <T>(path: string, body: unknown) => call<T>('PATCH', path, body),
  put: <T>(path: string, body: unknown) => call<T>('PUT', path, body),
  del: <T>(path: string) => call<T>('DELETE', path),
};

/** The signed-in user, or a redirect to sign-in (the session ended or never was). */
export async function loadMe(): Promise<Me | null> {
  try {
    const data = await api.get<Me & { signedIn: boolean }>('/session');
    if (!data.signedIn) {
      location.assign(loginUrl());
      return null;
    }
    setCsrfToken(data.csrfToken);
    return data;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      location.assign(loginUrl());
      return null;
    }
    throw err;
  }
}

/** A signed-in page's request failed with 401: the session expired or the user was disabled. */
export function handleSignedOut(err: unknown): boolean {
  if (err instanceof ApiError && err.status === 401 && err.code === 'sign_in_required') {
    location.assign(loginUrl());
    return true;
  }
  return false;
}
