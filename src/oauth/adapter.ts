// oidc-provider's storage on dbq's store: every artifact of a workspace's authorization server
// (interactions, codes, tokens, registered clients, grants) is a row of `oauth_artifacts`, so
// every process of a deployment sees the same state (a code issued by one is redeemed at
// another; a revocation anywhere is final everywhere). Rows are keyed by the SHA-256 of the
// artifact's id: for an opaque token the id is the token, and a copy of the store must not
// hold usable tokens (the API keys' rule).
import { createHash } from 'node:crypto';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { OAuthArtifactRow, OAuthDb } from './tables.ts';

export function artifactKey(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

/** Expired rows are removed now and then by the writes themselves (no timer per process). */
const SWEEP_EVERY = 200;
let writesSinceSweep = 0;

export class StoreAdapter implements Adapter {
  constructor(
    private readonly db: OAuthDb,
    private readonly workspaceId: string,
    private readonly kind: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const row: OAuthArtifactRow = {
      workspace_id: this.workspaceId,
      kind: this.kind,
      id: artifactKey(id),
      payload: JSON.stringify(payload),
      // A Grant's own rows carry its id too, so revoking a grant removes it with its tokens.
      grant_id: (payload.grantId as string | undefined) ?? (this.kind === 'Grant' ? id : null),
      uid: (payload.uid as string | undefined) ?? null,
      user_code: (payload.userCode as string | undefined) ?? null,
      expires_at: expiresIn ? Date.now() + expiresIn * 1000 : null,
      consumed_at: null,
    };
    await this.db
      .insertInto('oauth_artifacts')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['workspace_id', 'kind', 'id']).doUpdateSet({
          payload: row.payload,
          grant_id: row.grant_id,
          uid: row.uid,
          user_code: row.user_code,
          expires_at: row.expires_at,
        }),
      )
      .execute();
    if (++writesSinceSweep >= SWEEP_EVERY) {
      writesSinceSweep = 0;
      // Fire and forget: a failed sweep leaves rows the next one removes.
      this.db
        .deleteFrom('oauth_artifacts')
        .where('expires_at', '<', Date.now() - 60_000)
        .execute()
        .catch(() => {});
    }
  }

  private select() {
    return this.db
      .selectFrom('oauth_artifacts')
      .select(['payload', 'expires_at', 'consumed_at'])
      .where('workspace_id', '=', this.workspaceId)
      .where('kind', '=', this.kind);
  }

  private toPayload(row: { payload: string; expires_at: number | string | null; consumed_at: number | string | null } | undefined) {
    if (!row) return undefined;
    if (row.expires_at !== null && Number(row.expires_at) <= Date.now()) return undefined;
    const payload = JSON.parse(row.payload) as AdapterPayload;
    if (row.consumed_at !== null) payload.consumed = Math.floor(Number(row.consumed_at) / 1000);
    return payload;
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.toPayload(await this.select().where('id', '=', artifactKey(id)).executeTakeFirst());
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.toPayload(await this.select().where('uid', '=', uid).executeTakeFirst());
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.toPayload(await this.select().where('user_code', '=', userCode).executeTakeFirst());
  }

  async consume(id: string): Promise<void> {
    await this.db
      .updateTable('oauth_artifacts')
      .set({ consumed_at: Date.now() })
      .where('workspace_id', '=', this.workspaceId)
      .where('kind', '=', this.kind)
      .where('id', '=', artifactKey(id))
      .execute();
  }

  async destroy(id: string): Promise<void> {
    await this.db
      .deleteFrom('oauth_artifacts')
      .where('workspace_id', '=', this.workspaceId)
      .where('kind', '=', this.kind)
      .where('id', '=', artifactKey(id))
      .execute();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db
      .deleteFrom('oauth_artifacts')
      .where('workspace_id', '=', this.workspaceId)
      .where('kind', '=', this.kind)
      .where('grant_id', '=', grantId)
      .execute();
  }
}
