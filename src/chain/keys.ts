import { createHmac } from 'node:crypto';
import type { Keypair } from '@solana/web3.js';
import { keypairFromSeed } from './ed25519.js';

/** Keypairs a launch creates accounts with; derived, so they exist before the first send. */
export interface LaunchKeys {
  /** The token mint. */
  mint: Keypair;
  /** A spare signer for PDAs that need a base key (Jupiter Lock escrow). */
  base: Keypair;
}

/** Derives one 32-byte seed per purpose: HMAC-SHA256(master, "launch-key/v1/<launchId>/<purpose>"). */
export function deriveSeed(masterSecret: Buffer, launchId: string, purpose: string): Buffer {
  return createHmac('sha256', masterSecret).update(`launch-key/v1/${launchId}/${purpose}`).digest();
}

/**
 * Deterministic launch keypairs: the same master secret and launch id always give the same
 * addresses, so a resumed launch signs with the keys whose accounts it may already have created.
 */
export function deriveLaunchKeys(masterSecret: Buffer, launchId: string): LaunchKeys {
  if (masterSecret.length < 32) throw new Error('master secret must be at least 32 bytes');
  if (launchId === '') throw new Error('launch id must not be empty');
  return {
    mint: keypairFromSeed(deriveSeed(masterSecret, launchId, 'mint')),
    base: keypairFromSeed(deriveSeed(masterSecret, launchId, 'base')),
  };
}
