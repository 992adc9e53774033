// Admins: who may use a connection — everyone in the workspace (the default) or chosen users.
// Admins always may. A user left out no longer sees the connection anywhere (the API answers
// 404 for it), so the dialog says so before saving.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';

interface User {
  id: string;
  email: string;
  role: 'admin' | 'read_only';
}
type Grants = { everyone: true } | { everyone: false; users: { id: string; email: string }[] };

export function ConnectionAccess({
  connection,
  onClose,
  onError,
}: {
  connection: { id: string; name: string } | null;
  onClose(): void;
  onError(err: unknown): void;
}) {
  const [users, setUsers] = useState<User[] | null>(null);
  const [everyone, setEveryone] = useState(true);
  const [chosen, setChosen] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!connection) return;
    setUsers(null);
    Promise.all([api.get<{ users: User[] }>('/users'), api.get<Grants>(`/connections/${encodeURIComponent(connection.id)}/grants`)]).then(
      ([u, g]) => {
        setUsers(u.users);
        setEveryone(g.everyone);
        setChosen(g.everyone ? [] : g.users.map((x) => x.id));
      },
      (err) => {
        onClose();
        onError(err);
      },
    );
  }, [connection?.id]);

  const save = async () => {
    if (!connection) return;
    setBusy(true);
    try {
      await api.put(
        `/connections/${encodeURIComponent(connection.id)}/grants`,
        everyone ? { everyone: true } : { everyone: false, users: chosen },
      );
      onClose();
    } catch (err) {
      onError(err);
    } finally {
      setBusy(false);
    }
  };

  const toggle = (id: string, on: boolean) => setChosen((c) => (on ? [...c, id] : c.filter((x) => x !== id)));
  return (
    <ConfirmDialog
      open={connection !== null}
      title={`Who may use ${connection?.name ?? ''}?`}
      confirmLabel="Save access"
      busy={busy || users === null}
      onConfirm={save}
      onCancel={onClose}
    >
      {users === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <>
          <label class="check">
            <input type="radio" name="access" checked={everyone} onChange={() => setEveryone(true)} /> Everyone in this workspace
          </label>
          <label class="check">
            <input type="radio" name="access" checked={!everyone} onChange={() => setEveryone(false)} /> Admins and these users:
          </label>
          <fieldset class="field" aria-label="Users" disabled={everyone}>
            {users
              .filter((u) => u.role !== 'admin')
              .map((u) => (
                <label class="check" key={u.id}>
                  <input type="checkbox" checked={chosen.includes(u.id)} onChange={(e) => toggle(u.id, e.currentTarget.checked)} />{' '}
                  {u.email}
                </label>
              ))}
          </fieldset>
          <p class="muted">
            Users left out do not see this connection at all: it is missing from their lists and answers “Connection not found”.
          </p>
        </>
      )}
    </ConfirmDialog>
  );
}
