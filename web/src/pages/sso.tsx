import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, handleSignedOut } from '../api.ts';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { useMe } from '../hooks.ts';

interface SsoSettings {
  configured: boolean;
  issuer: string | null;
  clientId: string | null;
  clientSecretSet: boolean;
  allowedDomains: string[];
  defaultRole: 'admin' | 'read_only';
  passwordSignIn: boolean;
  redirectUri: string;
  updatedAt: string | null;
}

interface Form {
  issuer: string;
  clientId: string;
  clientSecret: string;
  domains: string;
  defaultRole: 'admin' | 'read_only';
  passwordSignIn: boolean;
}

function formOf(s: SsoSettings): Form {
  return {
    issuer: s.issuer ?? '',
    clientId: s.clientId ?? '',
    clientSecret: '',
    domains: s.allowedDomains.join(', '),
    defaultRole: s.defaultRole,
    passwordSignIn: s.passwordSignIn,
  };
}

/** Single sign-on (admins): the OIDC provider, who may sign in with it, and whether passwords still work. */
export function SsoPage() {
  const { me } = useMe();
  const [settings, setSettings] = useState<SsoSettings | null>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const show = (s: SsoSettings) => {
    setSettings(s);
    setForm(formOf(s));
  };

  useEffect(() => {
    if (!me) return;
    api.get<SsoSettings>('/sso/settings').then(
      (d) => show(d),
      (err) => {
        if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
      },
    );
  }, [me]);

  const set = (patch: Partial<Form>) => setForm((f) => (f ? { ...f, ...patch } : f));

  const save = async (e: Event) => {
    e.preventDefault();
    if (!form) return;
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const body: Record<string, unknown> = {
        issuer: form.issuer,
        clientId: form.clientId,
        allowedDomains: form.domains
          .split(/[\s,]+/)
          .map((d) => d.trim())
          .filter(Boolean),
        defaultRole: form.defaultRole,
        passwordSignIn: form.passwordSignIn,
      };
      if (form.clientSecret) body.clientSecret = form.clientSecret;
      show(await api.put<SsoSettings>('/sso/settings', body));
      setNotice('Single sign-on saved.');
    } catch (err) {
      if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      show(await api.del<SsoSettings>('/sso/settings'));
      setNotice('Single sign-on removed. Password sign-in works again.');
    } catch (err) {
      if (!handleSignedOut(err)) setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Layout me={me}>
      <div class="page-head">
        <div>
          <h1>Single sign-on</h1>
          <p class="muted">People of your organisation sign in with its identity provider (OpenID Connect: Okta, Google, Keycloak…).</p>
        </div>
      </div>
      <ErrorBox error={error} />
      {notice && (
        <div class="alert alert-ok" role="status">
          {notice}
        </div>
      )}
      {!settings || !form ? (
        <p class="muted">Loading…</p>
      ) : (
        <form class="card inline-form grid-form" onSubmit={save} aria-label="Single sign-on">
          <div class="field">
            <span>Redirect URI</span>
            <code class="secret" data-testid="sso-redirect-uri">
              {settings.redirectUri}
            </code>
            <small class="muted">Register this address at the identity provider as the application's redirect (callback) URI.</small>
          </div>
          <label class="field">
            <span>Issuer URL</span>
            <input
              type="url"
              required
              placeholder="https://login.example.com"
              value={form.issuer}
              onInput={(e) => set({ issuer: e.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>Client ID</span>
            <input type="text" required value={form.clientId} onInput={(e) => set({ clientId: e.currentTarget.value })} />
          </label>
          <label class="field">
            <span>Client secret</span>
            <input
              type="password"
              autocomplete="off"
              required={!settings.clientSecretSet}
              placeholder={settings.clientSecretSet ? 'Set (leave blank to keep)' : ''}
              value={form.clientSecret}
              onInput={(e) => set({ clientSecret: e.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>Allowed email domains</span>
            <input
              type="text"
              required
              placeholder="acme.com, acme.co.uk"
              value={form.domains}
              onInput={(e) => set({ domains: e.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>Role of new users</span>
            <select value={form.defaultRole} onChange={(e) => set({ defaultRole: e.currentTarget.value as Form['defaultRole'] })}>
              <option value="read_only">Read only</option>
              <option value="admin">Admin</option>
            </select>
          </label>
          <label class="check">
            <input type="checkbox" checked={form.passwordSignIn} onChange={(e) => set({ passwordSignIn: e.currentTarget.checked })} />{' '}
            Password sign-in stays on
          </label>
          <div class="form-actions">
            <button type="submit" class="btn btn-primary" disabled={busy}>
              Save
            </button>
            {settings.configured && (
              <button type="button" class="btn btn-danger-outline" disabled={busy} onClick={remove}>
                Remove single sign-on
              </button>
            )}
          </div>
        </form>
      )}
    </Layout>
  );
}
