// Admins: the workspace's longest API key lifetime (maxKeyDays). Empty means no limit.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';

export function KeyLifetimeSetting({
  maxKeyDays,
  onSaved,
  onError,
}: {
  maxKeyDays: number | null;
  onSaved(days: number | null): void;
  onError(err: unknown): void;
}) {
  const [value, setValue] = useState(maxKeyDays === null ? '' : String(maxKeyDays));
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const days = value.trim() ? Number(value) : null;
      const { workspace } = await api.patch<{ workspace: { maxKeyDays: number | null } }>('/workspace', { maxKeyDays: days });
      onSaved(workspace.maxKeyDays);
    } catch (err) {
      onError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card inline-form" onSubmit={save} aria-label="Key lifetime">
      <label class="field">
        <span>Longest key lifetime (days)</span>
        <input type="number" min={1} max={3650} placeholder="no limit" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </label>
      <div class="form-actions">
        <button type="submit" class="btn" disabled={busy}>
          Save
        </button>
        <small class="muted">New keys without an expiry get this lifetime; e.g. 90 for a 90-day rotation.</small>
      </div>
    </form>
  );
}
