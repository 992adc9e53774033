// A new password and its confirmation, as the setup, set-password and account pages ask for
// them: both at least MIN_PASSWORD characters (the server's rule too), and checked to match
// before anything is sent.
import { useState } from 'preact/hooks';
import { ApiError } from '../api.ts';

export const MIN_PASSWORD = 8;
export const PASSWORDS_DIFFER = 'The two passwords differ';

/** The message to show when the confirmation does not match, else null. */
export function passwordsDiffer(password: string, confirm: string, message = PASSWORDS_DIFFER): string | null {
  return password === confirm ? null : message;
}

/** A form that only sets a new password: checks the two match, then `send`s it; on failure
 * shows the API's message (else `failure`) and lets the user try again. */
export function useNewPasswordForm(send: (password: string) => Promise<void>, failure: string) {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const differ = passwordsDiffer(password, confirm);
    if (differ) {
      setError(differ);
      return;
    }
    setBusy(true);
    try {
      await send(password);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : failure);
      setBusy(false);
    }
  };

  return { password, setPassword, confirm, setConfirm, error, setError, busy, submit };
}

export function NewPasswordFields(props: {
  password: string;
  confirm: string;
  onPassword: (value: string) => void;
  onConfirm: (value: string) => void;
  label?: string;
  confirmLabel?: string;
  autoFocus?: boolean;
  /** Shows "At least 8 characters." under the first field, which it describes. */
  hint?: boolean;
}) {
  const { label = 'New password', confirmLabel = 'Confirm password', hint = false } = props;
  return (
    <>
      <label class="field">
        <span>{label}</span>
        <input
          type="password"
          autocomplete="new-password"
          minLength={MIN_PASSWORD}
          required
          autoFocus={props.autoFocus}
          aria-describedby={hint ? 'password-hint' : undefined}
          value={props.password}
          onInput={(e) => props.onPassword(e.currentTarget.value)}
        />
      </label>
      {hint && <small id="password-hint" class="muted field-hint">{`At least ${MIN_PASSWORD} characters.`}</small>}
      <label class="field">
        <span>{confirmLabel}</span>
        <input
          type="password"
          autocomplete="new-password"
          minLength={MIN_PASSWORD}
          required
          value={props.confirm}
          onInput={(e) => props.onConfirm(e.currentTarget.value)}
        />
      </label>
    </>
  );
}
