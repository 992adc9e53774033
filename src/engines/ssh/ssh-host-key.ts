// The pinned host key of an SSH bastion (ssh-tunnel.ts), as a SHA-256 fingerprint. Pure: the
// connection records check a hostKey with it without loading ssh2.
import { createHash } from 'node:crypto';

const KEY_TYPE = /^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)$/;

export function fingerprintOf(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** A `hostKey` as given (a known_hosts line, `type base64`, or a `SHA256:` fingerprint) as its
 * fingerprint; null when it is none of these. A `@revoked`/`@cert-authority` line is refused:
 * it does not name the one key to trust. */
export function parseHostKey(text: string): string | null {
  const value = text.trim();
  const fp = /^SHA256:([A-Za-z0-9+/]{43})=?$/.exec(value);
  if (fp) return `SHA256:${fp[1]}`;
  if (value.includes('\n') || value.startsWith('@')) return null;
  const tokens = value.split(/\s+/);
  for (let i = 0; i < tokens.length - 1; i++) {
    if (!KEY_TYPE.test(tokens[i]!)) continue;
    const blob = Buffer.from(tokens[i + 1]!, 'base64');
    // The blob starts with its own type name: a key pasted under the wrong type is refused.
    if (blob.length < 4) return null;
    const len = blob.readUInt32BE(0);
    if (blob.subarray(4, 4 + len).toString('latin1') !== tokens[i]) return null;
    return fingerprintOf(blob);
  }
  return null;
}
