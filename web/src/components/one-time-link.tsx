// Pages opened from a one-time link (`?token=`): the setup link and the set-password link.
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { href } from '../env.ts';

/** The link's token; a page reads it once, when its module loads. */
export function linkToken(): string {
  return new URLSearchParams(location.search).get('token') ?? '';
}

/** Takes the token out of the address bar so it does not linger in history or screenshots. */
export function useTokenOutOfAddressBar(): void {
  useEffect(() => {
    if (location.search) history.replaceState(null, '', location.pathname);
  }, []);
}

/** What such a page shows when its link is not (or no longer) valid. */
export function InvalidLink(props: { title: string; children: ComponentChildren }) {
  return (
    <main id="main" class="auth">
      <div class="card auth-card">
        <h1>{props.title}</h1>
        <p role="alert">{props.children}</p>
        <p>
          <a href={href('/login')}>Go to sign in</a>
        </p>
      </div>
    </main>
  );
}
