import { createHash } from 'node:crypto';

/**
 * Anchor's 8-byte instruction discriminator: the first 8 bytes of sha256("global:<name>"),
 * where `name` is the snake_case instruction name as written in the program.
 */
export function instructionDiscriminator(name: string): Buffer {
  return createHash('sha256').update(`global:${name}`).digest().subarray(0, 8);
}

/** Anchor's 8-byte account discriminator: the first 8 bytes of sha256("account:<TypeName>"). */
export function accountDiscriminator(typeName: string): Buffer {
  return createHash('sha256').update(`account:${typeName}`).digest().subarray(0, 8);
}

/** True when `data` starts with the given 8-byte discriminator. */
export function hasDiscriminator(data: Uint8Array, discriminator: Uint8Array): boolean {
  if (data.length < discriminator.length) return false;
  return Buffer.from(data.subarray(0, discriminator.length)).equals(Buffer.from(discriminator));
}
