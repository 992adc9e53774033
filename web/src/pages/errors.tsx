import { Layout } from '../components/layout.tsx';
import { href } from '../env.ts';
import { useMe } from '../hooks.ts';

export function ForbiddenPage() {
  const { me } = useMe();
  return (
    <Layout me={me}>
      <div class="empty-state">
        <p class="big-status">403</p>
        <h1>Admins only</h1>
        <p>You need the admin role to see this page. Ask an admin of this workspace if you need access.</p>
        <p>
          <a class="btn" href={href('/')}>
            Back to the console
          </a>
        </p>
      </div>
    </Layout>
  );
}

export function NotFoundPage() {
  return (
    <main id="main" class="auth">
      <div class="card auth-card">
        <p class="big-status">404</p>
        <h1>Workspace not found</h1>
        <p>No workspace lives at this address. Check the link you were given.</p>
      </div>
    </main>
  );
}
