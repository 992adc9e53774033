// Connection secrets are sealed with AES-256-GCM before they reach the store. The record id
// is bound in as additional data, so a sealed password copied onto another row fails to open.
// A box may hold several keys (a key ring): it seals with the first and opens with whichever
// key sealed the value. GCM's tag makes a wrong key fail rather than return garbage, so trying
// each in turn is safe. That is what lets `dbq secret rotate` (rotate.ts) re-seal while the
// servers keep working, and survive being interrupted at any point.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface SecretBox {
  seal(plaintext: string, recordId: string): string;
  open(sealed: string, recordId: string): string;
}

const VERSION = 'v1';

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('secret key must be 32 bytes');
  return {
    seal(plaintext, recordId) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(recordId));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
    },
    open(sealed, recordId) {
      const [version, payload] = sealed.split(':');
      if (version !== VERSION || !payload) throw new Error('unknown secret format');
      const raw = Buffer.from(payload, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(recordId));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}

/** Seals with `keys[0]`; opens with any of them. */
export function createKeyRing(keys: Buffer[]): SecretBox {
  const boxes = keys.map(createSecretBox);
  return {
    seal: (plaintext, recordId) => boxes[0]!.seal(plaintext, recordId),
    open(sealed, recordId) {
      let failure: unknown;
      for (const box of boxes) {
        try {
          return box.open(sealed, recordId);
        } catch (err) {
          failure ??= err;
        }
      }
      throw failure;
    },
  };
}

/** The data dir's key file, and the next key written beside it while a rotation is under way. */
export const KEY_FILE = 'secret.key';
export const NEXT_KEY_FILE = 'secret.key.new';

/** 64 hex characters or base64 of exactly 32 bytes, else null. */
export function parseSecretKey(text: string): Buffer | null {
  const value = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, 'hex')
    : /^[A-Za-z0-9+/]{43}=$/.test(value)
      ? Buffer.from(value, 'base64')
      : null;
  return key && key.length === 32 ? key : null;
}

function readKeyFile(file: string): Buffer | null {
  try {
    return parseSecretKey(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** How often a server looks at the key files again, at most. */
const KEY_FILE_RECHECK_MS = 1_000;

/**
 * The box a server seals and opens with. With DBQ_SECRET_KEY: that key alone. Otherwise the data
 * dir's key files, followed while the server runs: during a rotation (secret.key.new beside
 * secret.key) it seals with the new key and opens with both; once the rotation has replaced
 * secret.key it uses that. So servers on the data dir keep opening every secret through a
 * rotation without a restart. A value no key opens makes it look at the files again at once.
 * `first`: the key already loaded by the caller, so start-up reads the key file once.
 */
export function loadSecretBox(configured: string | null, dataDir: string, first = loadSecretKey(configured, dataDir)): SecretBox {
  if (configured) return createSecretBox(first);
  const current = path.join(dataDir, KEY_FILE);
  const next = path.join(dataDir, NEXT_KEY_FILE);
  let ring = createKeyRing([first]);
  let stamp = '';
  let checkedAt = 0;
  const refresh = (force: boolean) => {
    const now = Date.now();
    if (!force && now - checkedAt < KEY_FILE_RECHECK_MS) return;
    checkedAt = now;
    const seen = [current, next].map((f) => {
      try {
        const st = fs.statSync(f);
        return `${st.ino}:${st.mtimeMs}:${st.size}`;
      } catch {
        return '-';
      }
    });
    if (seen.join('|') === stamp) return;
    const keys = [readKeyFile(next), readKeyFile(current)].filter((k): k is Buffer => k !== null);
    if (keys.length === 0) return;
    stamp = seen.join('|');
    ring = createKeyRing(keys);
  };
  refresh(true);
  return {
    seal(plaintext, recordId) {
      refresh(false);
      return ring.seal(plaintext, recordId);
    },
    open(sealed, recordId) {
      refresh(false);
      try {
        return ring.open(sealed, recordId);
      } catch (err) {
        const before = ring;
        refresh(true);
        if (ring === before) throw err;
        return ring.open(sealed, recordId);
      }
    },
  };
}

/** DBQ_SECRET_KEY (hex or base64 of 32 bytes), else a key generated once into the data dir. */
export function loadSecretKey(configured: string | null, dataDir: string): Buffer {
  if (configured) {
    const key = /^[0-9a-fA-F]{64}$/.test(configured) ? Buffer.from(configured, 'hex') : Buffer.from(configured, 'base64');
    if (key.length !== 32) throw new Error('DBQ_SECRET_KEY must be 32 bytes as 64 hex or 44 base64 characters');
    return key;
  }
  const file = path.join(dataDir, KEY_FILE);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    // 'wx' fails if another process (the CLI, a second server) created it first; then read it.
    fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'hex');
}
