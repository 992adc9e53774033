// The OAuth consent page ({workspace_url}/oauth/consent/{uid}): an app (ChatGPT, claude.ai, any
// MCP client) asked for access; the signed-in user sees who asks and where the answer goes, and
// narrows what is granted — read-only, connections, tools, lifetime. What is granted is a scoped
// key's scope; the server checks it again and never grants more than the user has.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut, loginUrl } from '../api.ts';
import { href, WORKSPACE } from '../env.ts';
import { useMe } from '../hooks.ts';
import { ChoiceList, isEmptyChoice } from '../components/choice-list.tsx';
import '../components/oauth.css';

export interface Interaction {
  client: { id: string; name: string; redirectHost: string };
  scopes: string[];
  resource: string;
  userRole: 'admin' | 'read_only';
  connections: { id: string; name: string }[];
  tools: { name: string; description?: string }[];
  defaultLifetimeDays: number;
  maxLifetimeDays: number | null;
}

export interface AllowRequest {
  readOnly: boolean;
  connections: string[] | 'all';
  tools: string[] | 'all';
  lifetimeDays: number;
}

/** The uid is the path's last segment: /oauth/consent/{uid} (under /w/{slug} in the path form). */
export function interactionUid(pathname: string): string {
  const m = /\/oauth\/consent\/([^/]+)\/?$/.exec(pathname);
  return m ? decodeURIComponent(m[1]!) : '';
}

/** The lifetime offered first: the default, but never past the workspace's longest. */
export function initialDays(i: Pick<Interaction, 'defaultLifetimeDays' | 'maxLifetimeDays'>): number {
  return i.maxLifetimeDays === null ? i.defaultLifetimeDays : Math.min(i.defaultLifetimeDays, i.maxLifetimeDays);
}

const SCOPE_TEXT: Record<string, string> = {
  'dbq:read': 'run reads and curated tools',
  'dbq:write': 'run statements that change data',
  offline_access: 'stay connected without asking you again until the grant expires',
};

export function OAuthConsentPage() {
  const { me, error: meError } = useMe();
  const uid = interactionUid(location.pathname);
  const [req, setReq] = useState<Interaction | null>(null);
  const [gone, setGone] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [readOnly, setReadOnly] = useState(false);
  const [connections, setConnections] = useState<string[] | 'all'>('all');
  const [tools, setTools] = useState<string[] | 'all'>('all');
  const [days, setDays] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!me) return;
    api.get<Interaction>(`/oauth/interactions/${encodeURIComponent(uid)}`).then(
      (d) => {
        setReq(d);
        // A read_only user cannot grant writes; an app asking for reads only gets reads only.
        setReadOnly(d.userRole === 'read_only' || !d.scopes.includes('dbq:write'));
        setDays(String(initialDays(d)));
      },
      (err: unknown) => {
        if (handleSignedOut(err)) return;
        // 404/410: the request expired or was answered already (a second tab, the back button).
        if (err instanceof ApiError && (err.status === 404 || err.status === 410)) setGone(err.message);
        else setError(err instanceof ApiError ? err.message : String(err));
      },
    );
  }, [me]);

  const max = req?.maxLifetimeDays ?? 3650;
  const daysNumber = Number(days);
  const daysValid = Number.isInteger(daysNumber) && daysNumber >= 1 && daysNumber <= max;
  const forcedReadOnly = req?.userRole === 'read_only';
  // "Only these" with nothing ticked would grant nothing: Allow waits for a choice.
  const canAllow = daysValid && !isEmptyChoice(connections) && !isEmptyChoice(tools);

  const answer = async (verb: 'allow' | 'deny') => {
    setBusy(true);
    setError(null);
    try {
      const body: AllowRequest | Record<string, never> =
        verb === 'allow' ? { readOnly: forcedReadOnly || readOnly, connections, tools, lifetimeDays: daysNumber } : {};
      const { redirectTo } = await api.post<{ redirectTo: string }>(`/oauth/interactions/${encodeURIComponent(uid)}/${verb}`, body);
      // Back to the app (its redirect URI, through dbq's authorization endpoint).
      location.assign(redirectTo);
    } catch (err) {
      setBusy(false);
      if (handleSignedOut(err)) return;
      if (err instanceof ApiError && (err.status === 404 || err.status === 410)) setGone(err.message);
      else setError(err instanceof ApiError ? err.message : String(err));
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    if (canAllow) void answer('allow');
  };

  const signOut = async () => {
    try {
      await api.post('/logout');
    } catch {
      // Signed out or not, sign-in comes next, then back here.
    }
    location.assign(loginUrl());
  };

  return (
    <main id="main" class="auth consent">
      <form class="card auth-card consent-card" onSubmit={submit} aria-labelledby="consent-title">
        <div class="brand brand-large">
          <span class="logo" aria-hidden="true">
            ◆
          </span>{' '}
          dbq
        </div>
        {(meError || (!req && !gone && !error)) && <p class="muted">{meError ?? 'Loading…'}</p>}
        {gone && (
          <>
            <h1 id="consent-title">This request is no longer open</h1>
            <div class="alert alert-info" role="status">
              {gone}
            </div>
            <p class="muted">It expired or was already answered. Start again from the app that sent you here.</p>
            <a class="btn" href={href('/settings/api-keys')}>
              See connected apps
            </a>
          </>
        )}
        {!req && error && (
          <div class="alert alert-error" role="alert">
            {error}
          </div>
        )}
        {req && !gone && (
          <>
            <h1 id="consent-title">
              Allow <span class="consent-client">{req.client.name}</span> to use workspace {WORKSPACE}?
            </h1>
            <p class="consent-redirect">
              After you answer, you go back to <strong data-testid="redirect-host">{req.client.redirectHost}</strong>. Allow only if you
              started this from that app.
            </p>
            {me && (
              <p class="muted consent-who">
                Signed in as <strong>{me.user.email}</strong>{' '}
                <button type="button" class="btn-link" onClick={signOut}>
                  Not you?
                </button>
              </p>
            )}
            <div class="consent-asks">
              <span class="consent-label">It asks to</span>
              <ul>
                {req.scopes.map((s) =>
                  s === 'dbq:write' && (forcedReadOnly || readOnly) ? (
                    <li key={s} class="consent-withheld">
                      <s>{SCOPE_TEXT[s]}</s> <small>(not granted: read-only)</small>
                    </li>
                  ) : (
                    <li key={s}>{SCOPE_TEXT[s] ?? s}</li>
                  ),
                )}
              </ul>
              <small class="muted consent-resource">
                at <code>{req.resource}</code>
              </small>
            </div>
            {error && (
              <div class="alert alert-error" role="alert">
                {error}
              </div>
            )}
            <label class="check consent-readonly">
              <input
                type="checkbox"
                checked={forcedReadOnly || readOnly}
                disabled={forcedReadOnly}
                onChange={(e) => setReadOnly(e.currentTarget.checked)}
              />{' '}
              Read-only
              <small class="muted">
                {forcedReadOnly ? '(your role is read only)' : '(the app may run reads only, whatever your role)'}
              </small>
            </label>
            <div class="consent-choices">
              <ChoiceList
                legend="Connections"
                allLabel="Every connection you may use"
                items={req.connections.map((c) => ({ value: c.id, label: c.name }))}
                value={connections}
                onChange={setConnections}
              />
              {req.tools.length > 0 && (
                <ChoiceList
                  legend="Tools"
                  allLabel="Every curated tool"
                  items={req.tools.map((t) => ({ value: t.name, label: t.name, title: t.description }))}
                  value={tools}
                  onChange={setTools}
                />
              )}
            </div>
            <label class="field consent-days">
              <span>Expires in (days)</span>
              <input
                type="number"
                min={1}
                max={max}
                required
                value={days}
                aria-invalid={!daysValid}
                onInput={(e) => setDays(e.currentTarget.value)}
              />
            </label>
            <small class="field-hint muted">
              {req.maxLifetimeDays !== null
                ? `At most ${req.maxLifetimeDays} days in this workspace.`
                : 'Revoke it any time under API keys → Connected apps.'}
            </small>
            {!daysValid && (
              <small class="field-hint consent-invalid" role="status">
                A whole number of days from 1 to {max}.
              </small>
            )}
            <div class="form-actions consent-actions">
              <button type="submit" class="btn btn-primary" disabled={busy || !canAllow}>
                Allow
              </button>
              <button type="button" class="btn" disabled={busy} onClick={() => void answer('deny')}>
                Deny
              </button>
            </div>
          </>
        )}
      </form>
    </main>
  );
}
