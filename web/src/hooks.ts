import { useEffect, useState } from 'preact/hooks';
import { loadMe, type Me } from './api.ts';

/** The signed-in user for a page that needs one (redirects to sign-in otherwise). */
export function useMe(): { me: Me | null; error: string | null } {
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    loadMe().then(setMe, (err: Error) => setError(err.message));
  }, []);
  return { me, error };
}
