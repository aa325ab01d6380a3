import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for identifiers, drawn from the CSPRNG 4 KB at a time: one `randomFillSync` per
 * call cost about as much as the rest of building an id (profile: 4.5 % of the dispatcher's
 * process). Identifiers are not secrets (API keys and sealing keys draw their own bytes).
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function take(bytes: number): Buffer {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = pool.subarray(poolAt, poolAt + bytes);
  poolAt += bytes;
  return out;
}

/** A random, URL-safe identifier with a type prefix: `lch_3kq...`. */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${take(bytes).toString('base64url')}`;
}

/**
 * The 64 URL-safe characters in ASCII order, so that equal-length strings of them compare (bytewise,
 * as SQLite and PostgreSQL's C collation do, and as JavaScript does) in the order of their values.
 */
const SORTED_ALPHABET = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';

/**
 * An identifier that sorts by creation time: `dlv_` + 8 characters of the millisecond clock (48
 * bits, good until the year 10889) + 12 random characters (72 bits). For the rows written by the
 * thousand a second (events, deliveries, attempts, launches): a new key lands at the right edge of
 * its primary-key index (and of indexes that lead with it) instead of on a random page, so a
 * transaction writing many rows dirties a few pages, not one per row. Unique like {@link newId}:
 * two ids of the same millisecond collide with probability 2⁻⁷².
 */
export function newSortableId(prefix: string, nowMs = Date.now()): string {
  let time = '';
  let t = Math.max(0, Math.floor(nowMs));
  for (let i = 0; i < 8; i++) {
    time = SORTED_ALPHABET[t % 64] + time;
    t = Math.floor(t / 64);
  }
  const random = take(9);
  let tail = '';
  // 9 bytes = 72 bits = 12 characters of 6 bits.
  for (let i = 0; i < 9; i += 3) {
    const n = (random[i]! << 16) | (random[i + 1]! << 8) | random[i + 2]!;
    tail += SORTED_ALPHABET[(n >> 18) & 63]! + SORTED_ALPHABET[(n >> 12) & 63]! + SORTED_ALPHABET[(n >> 6) & 63]! + SORTED_ALPHABET[n & 63]!;
  }
  return `${prefix}_${time}${tail}`;
}
