import { render } from 'preact';
import './styles.css';
import { PAGE } from './env.ts';
import { AccountPage } from './pages/account.tsx';
import { ApiKeysPage } from './pages/api-keys.tsx';
import { AuditPage } from './pages/audit.tsx';
import { ConnectionsPage } from './pages/connections.tsx';
import { ConsolePage } from './pages/console.tsx';
import { ForbiddenPage, NotFoundPage } from './pages/errors.tsx';
import { LoginPage } from './pages/login.tsx';
import { OAuthConsentPage } from './pages/oauth-consent.tsx';
import { SetPasswordPage } from './pages/set-password.tsx';
import { SetupPage } from './pages/setup.tsx';
import { SsoPage } from './pages/sso.tsx';
import { ToolsPage } from './pages/tools.tsx';
import { UsersPage } from './pages/users.tsx';

const pages: Record<string, () => preact.JSX.Element> = {
  login: LoginPage,
  setup: SetupPage,
  'set-password': SetPasswordPage,
  account: AccountPage,
  console: ConsolePage,
  'api-keys': ApiKeysPage,
  connections: ConnectionsPage,
  users: UsersPage,
  audit: AuditPage,
  sso: SsoPage,
  tools: ToolsPage,
  'oauth-consent': OAuthConsentPage,
  forbidden: ForbiddenPage,
  'not-found': NotFoundPage,
};

const Page = pages[PAGE] ?? NotFoundPage;
render(<Page />, document.getElementById('app')!);
