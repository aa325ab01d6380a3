import { readFileSync } from 'node:fs';
import { Keypair } from '@solana/web3.js';
import { NonRetriableError } from '../../lib/retry.js';

/** Reads a Solana CLI keypair file (a JSON array of 64 secret-key bytes). */
export function loadKeypairFile(path: string): Keypair {
  let bytes: unknown;
  try {
    bytes = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new NonRetriableError('invalid_configuration', `SOLANA_PAYER_KEYPAIR ${path} cannot be read: ${(error as Error).message}`);
  }
  if (!Array.isArray(bytes) || bytes.length !== 64 || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    throw new NonRetriableError('invalid_configuration', `SOLANA_PAYER_KEYPAIR ${path} must hold a JSON array of 64 bytes`);
  }
  return Keypair.fromSecretKey(Uint8Array.from(bytes as number[]));
}
