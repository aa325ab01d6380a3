import { PublicKey } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync, unpackAccount, unpackMint, type Mint } from '@solana/spl-token';
import type { ChainBackend } from '../backend.js';
import type { LaunchPlan } from './types.js';

/** Token program of the plan's standard. */
export function tokenProgramOf(plan: LaunchPlan): PublicKey {
  return plan.tokenStandard === 'token-2022' ? TOKEN_2022_PROGRAM_ID : TOKEN_PROGRAM_ID;
}

/** The mint as stored on chain, or null when absent or owned by another program. */
export async function readMint(chain: ChainBackend, mint: PublicKey, programId: PublicKey): Promise<Mint | null> {
  const info = await chain.getAccountInfo(mint);
  if (!info || !info.owner.equals(programId)) return null;
  return unpackMint(mint, info, programId);
}

/** Token balance of `owner`'s associated token account in base units; 0n when it does not exist. */
export async function readAtaBalance(chain: ChainBackend, mint: PublicKey, owner: PublicKey, programId: PublicKey): Promise<bigint> {
  const ata = getAssociatedTokenAddressSync(mint, owner, true, programId);
  const info = await chain.getAccountInfo(ata);
  if (!info || !info.owner.equals(programId)) return 0n;
  return unpackAccount(ata, info, programId).amount;
}
