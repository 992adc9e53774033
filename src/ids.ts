// Identifiers: a type prefix plus a ULID-style body (48-bit millisecond time, 80 random bits,
// Crockford base32). Time-ordered, so history keyset paging can walk `id` alone, and
// monotonic within a process: two entries in the same millisecond still sort in write order.
// Every query takes two ids, so they are built with plain number arithmetic (the 80 random
// bits as two 40-bit halves) and the randomness is drawn from a pooled buffer rather than one
// crypto call per id.
import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const HALF = 2 ** 40;

const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function random40(): number {
  if (poolOffset + 5 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const value = pool.readUIntBE(poolOffset, 5);
  poolOffset += 5;
  return value;
}

let lastTime = 0;
let lastHigh = 0;
let lastLow = 0;

/** `value` (< 2^(5·length), a safe integer) as `length` base32 digits. */
function encode(value: number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

export function newId(prefix: string): string {
  let now = Date.now();
  if (now <= lastTime) {
    // Same (or an earlier, if the clock stepped back) millisecond: the previous random part
    // plus one keeps ids strictly increasing; 80 bits wrap around only in theory.
    now = lastTime;
    lastLow += 1;
    if (lastLow === HALF) {
      lastLow = 0;
      lastHigh = (lastHigh + 1) % HALF;
    }
  } else {
    lastHigh = random40();
    lastLow = random40();
  }
  lastTime = now;
  return `${prefix}_${encode(now, 10)}${encode(lastHigh, 8)}${encode(lastLow, 8)}`;
}

/** The smallest id of `prefix` made at or after `ms`: ids made before it sort below it. */
export function firstIdAt(prefix: string, ms: number): string {
  return `${prefix}_${encode(ms, 10)}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}
