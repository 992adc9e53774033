// Password sign-in for the web app. Every failure is the same InvalidCredentialsError, and an
// unknown email still pays for one scrypt, so neither the message nor the timing tells an
// attacker which emails have accounts.
import type { Kysely } from 'kysely';
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
