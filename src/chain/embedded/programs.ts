import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PublicKey } from '@solana/web3.js';

/** An account a program needs before it can be used (e.g. a pool program's config and fee receiver). */
export interface GenesisAccount {
  address: PublicKey;
  owner: PublicKey;
  lamports: bigint;
  data: Uint8Array;
  executable?: boolean;
}

/**
 * Creates the genesis accounts a loaded program needs. Runs at start when `programId` is
 * executable on the embedded chain; accounts that already exist (restored state) are left alone.
 */
export interface GenesisHook {
  programId: PublicKey;
  accounts(ctx: { payer: PublicKey; rentExempt(size: number): bigint }): GenesisAccount[];
}

const PROGRAM_FILE = /^([1-9A-HJ-NP-Za-km-z]{32,44})\.so$/;

/** Program binaries `<programId>.so` found in the programs directory. */
export function findProgramFiles(dir: string | undefined): Array<{ programId: string; path: string }> {
  if (dir === undefined || !existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => ({ name, match: PROGRAM_FILE.exec(name) }))
    .filter((e): e is { name: string; match: RegExpExecArray } => e.match !== null)
    .map(({ name, match }) => ({ programId: match[1] as string, path: join(dir, name) }));
}
