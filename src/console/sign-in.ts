// Password sign-in for the web app. Every failure is the same InvalidCredentialsError, and an
// unknown email still pays for one scrypt, so neither the message nor the timing tells an
// attacker which emails have accounts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { actorOf, inTransaction, recordAudit } from '../audit/audit.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../workspaces/api-keys.ts';
import { setSessionCookie } from './cookies.ts';
import { createSession, deleteSession, type WebSession } from './sessions.ts';
import type { WebContext } from './web-context.ts';
import type { Database, UserRow } from '../store/schema.ts';
import { verifyPassword } from '../workspaces/passwords.ts';
import { findUserRow } from '../workspaces/users.ts';
import { InvalidCredentialsError } from '../errors.ts';

// A real scrypt hash (of a throwaway word) with the same parameters as users' hashes.
const DUMMY_HASH = 'scrypt$16384$8$1$qYR12ZRIjG8W4xxfbb4WIA==$I0YHnfc5hokh5aaF5NoW9t2YuCUi8rAb+sZVV8rX3Tk=';

export async function checkPassword(db: Kysely<Database>, workspaceId: string, email: string, password: string): Promise<UserRow> {
  const row = await findUserRow(db, workspaceId, email);
  if (!row || !row.password_hash) {
    await verifyPassword(password, DUMMY_HASH);
    throw new InvalidCredentialsError();
  }
  const valid = await verifyPassword(password, row.password_hash);
  if (!valid || row.disabled_at !== null) throw new InvalidCredentialsError();
  return row;
}

/** A sign-in that passed its checks (password or SSO) becomes a session: a new token every time
 * (never the one the browser brought: session fixation), the session and its audit entry
 * committed together, the cookie set. */
export async function startSignedInSession(
  svc: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: WebContext,
  user: Pick<UserRow, 'id' | 'email' | 'role'>,
  source: 'ui' | 'sso',
): Promise<{ principal: Principal; session: WebSession }> {
  if (ctx.session) await deleteSession(svc.db, ctx.session.id);
  const principal: Principal = {
    workspace: { id: ctx.workspace.id, slug: ctx.workspace.slug, plan: ctx.workspace.plan },
    user: { id: user.id, email: user.email, role: user.role, accountRole: user.role },
    apiKey: null,
  };
  const session = await inTransaction(svc.db, async (trx) => {
    const created = await createSession(trx, { workspaceId: ctx.workspace.id, userId: user.id });
    await recordAudit(trx, {
      workspaceId: ctx.workspace.id,
      actor: actorOf(principal, request.ip, source),
      action: 'session.signed_in',
      target: { type: 'user', id: user.id, name: user.email },
      ...(source === 'sso' ? { changes: { method: 'sso' } } : {}),
    });
    return created;
  });
  setSessionCookie(reply, session.token, session.expiresAt, ctx.cookie);
  return { principal, session };
}
