import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Me } from '../api.ts';
import { href, PAGE, WORKSPACE } from '../env.ts';

const NAV: { page: string; path: string; label: string; adminOnly?: boolean }[] = [
  { page: 'console', path: '/', label: 'Console' },
  { page: 'tools', path: '/tools', label: 'Tools' },
  { page: 'api-keys', path: '/settings/api-keys', label: 'API keys' },
  { page: 'connections', path: '/settings/connections', label: 'Connections' },
  { page: 'users', path: '/settings/users', label: 'Users', adminOnly: true },
  { page: 'audit', path: '/settings/audit', label: 'Audit log', adminOnly: true },
  { page: 'sso', path: '/settings/sso', label: 'SSO', adminOnly: true },
  { page: 'account', path: '/settings/account', label: 'Account' },
];

export function Layout({ me, children, wide }: { me: Me | null; children: ComponentChildren; wide?: boolean }) {
  const [signingOut, setSigningOut] = useState(false);
  const signOut = async () => {
    setSigningOut(true);
    try {
      await api.post('/logout');
    } catch {
      // Signed out or not, the sign-in page is where this ends.
    }
    location.assign(href('/login'));
  };
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href={href('/')}>
          <span class="logo" aria-hidden="true">
            ◆
          </span>{' '}
          dbq
        </a>
        <span class="workspace" title="Workspace">
          {WORKSPACE}
        </span>
        <nav aria-label="Main">
          <ul>
            {NAV.filter((n) => !n.adminOnly || me?.user.role === 'admin').map((n) => (
              <li key={n.page}>
                <a href={href(n.path)} aria-current={PAGE === n.page ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="me">
          {me && (
            <>
              <span class="email">{me.user.email}</span>
              <span class={`badge ${me.user.role === 'admin' ? 'badge-admin' : ''}`}>
                {me.user.role === 'admin' ? 'admin' : 'read only'}
              </span>
              <button type="button" class="btn btn-ghost" onClick={signOut} disabled={signingOut}>
                Sign out
              </button>
            </>
          )}
        </div>
      </header>
      <main id="main" class={wide ? 'main wide' : 'main'} tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

export function ErrorBox({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <div class="alert alert-error" role="alert">
      {error}
    </div>
  );
}
