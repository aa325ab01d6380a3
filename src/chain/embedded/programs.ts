import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PublicKey } from '@solana/web3.js';

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

const isProgramId = (id: string): boolean => {
  try {
    return new PublicKey(id).toBase58() === id;
  } catch {
    return false;
  }
};

/**
 * Program binaries `<programId>.so` found in the programs directory, and the names of the other
 * entries (which are not loaded; the caller warns about them, since a misnamed dump is easy to make).
 */
export function findProgramFiles(dir: string | undefined): { programs: Array<{ programId: string; path: string }>; ignored: string[] } {
  if (dir === undefined || !existsSync(dir)) return { programs: [], ignored: [] };
  const programs: Array<{ programId: string; path: string }> = [];
  const ignored: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const id = PROGRAM_FILE.exec(name)?.[1];
    if (id !== undefined && isProgramId(id)) programs.push({ programId: id, path: join(dir, name) });
    else ignored.push(name);
  }
  return { programs, ignored };
}

/** A program file the embedded chain cannot load: names the file and what is wrong with it. */
export class ProgramFileError extends Error {
  constructor(
    readonly path: string,
    readonly programId: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `CHAIN_PROGRAMS_DIR: ${path} is not a loadable Solana program (${reason}); ` +
        `dump it again with \`solana program dump -u m ${programId} ${programId}.so\` or remove it`,
      options,
    );
    this.name = 'ProgramFileError';
  }
}

/** Why a program file cannot be an sBPF program, checked before handing it to the VM; undefined when it may be. */
export function programFileProblem(bytes: Uint8Array): string | undefined {
  if (bytes.length === 0) return 'the file is empty';
  if (bytes.length < 64 || bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) return 'it is not an ELF file';
  return undefined;
}
