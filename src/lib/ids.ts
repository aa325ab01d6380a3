import { randomBytes } from 'node:crypto';

/** A random, URL-safe identifier with a type prefix: `lch_3kq...`. */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}
