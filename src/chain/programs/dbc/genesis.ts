import { PublicKey, SystemProgram } from '@solana/web3.js';
import { MINT_SIZE, MintLayout, NATIVE_MINT, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import type { GenesisAccount } from '../cpmm/genesis.js';
import { rentExemptLamports } from '../rent.js';
import { dbcPoolAuthority } from './pdas.js';

/**
 * What DBC's migration borrows from its pool authority for the rent of the DAMM v2 accounts it
 * creates ("flash rent", paid back in the same instruction); on a cluster the authority holds it
 * already. 1 SOL, the program's FLASH_RENT_FUND.
 */
export const DBC_POOL_AUTHORITY_LAMPORTS = 1_000_000_000n;

/** The wrapped-SOL mint as every cluster has it (an embedded chain may not). */
export function nativeMintAccount(): GenesisAccount {
  const data = Buffer.alloc(MINT_SIZE);
  MintLayout.encode(
    { mintAuthorityOption: 0, mintAuthority: PublicKey.default, supply: 0n, decimals: 9, isInitialized: true, freezeAuthorityOption: 0, freezeAuthority: PublicKey.default },
    data,
  );
  return { address: NATIVE_MINT, owner: TOKEN_PROGRAM_ID, lamports: rentExemptLamports(MINT_SIZE), data, executable: false };
}

/**
 * The accounts the embedded chain needs before DBC can create and migrate a curve, as mainnet has
 * them: the wrapped-SOL mint (curves are quoted in SOL) and lamports on DBC's pool authority for
 * the migration's flash rent (docs/programs.md).
 */
export function dbcGenesisAccounts(programId: PublicKey): GenesisAccount[] {
  return [
    nativeMintAccount(),
    { address: dbcPoolAuthority(programId), owner: SystemProgram.programId, lamports: DBC_POOL_AUTHORITY_LAMPORTS, data: Buffer.alloc(0), executable: false },
  ];
}

/** The embedded backend's genesis hook for DBC: applied when the program is loaded; existing accounts are kept. */
export function dbcGenesisHook(programId: PublicKey): { programId: PublicKey; accounts(): GenesisAccount[] } {
  return { programId, accounts: () => dbcGenesisAccounts(programId) };
}
