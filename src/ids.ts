// Identifiers: a type prefix plus a ULID-style body (48-bit millisecond time, 80 random bits,
// Crockford base32). Time-ordered, so history keyset paging can walk `id` alone, and
// monotonic within a process: two entries in the same millisecond still sort in write order.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

let lastTime = 0;
let lastRandom = 0n;

function encode(value: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

export function newId(prefix: string): string {
  let now = Date.now();
  let random: bigint;
  if (now <= lastTime) {
    now = lastTime;
    random = (lastRandom + 1n) & ((1n << 80n) - 1n);
  } else {
    random = BigInt('0x' + randomBytes(10).toString('hex'));
  }
  lastTime = now;
  lastRandom = random;
  return `${prefix}_${encode(BigInt(now), 10)}${encode(random, 16)}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}
