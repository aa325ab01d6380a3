import { PublicKey } from '@solana/web3.js';
import { unpackMint, type Mint } from '@solana/spl-token';
import type { ChainBackend } from '../../../src/chain/backend.js';
import { readAtaBalance } from '../../../src/chain/steps/chainReads.js';

/** Reads a mint back from the chain with its owner program. */
export async function readMintBack(chain: ChainBackend, mint: string): Promise<{ owner: PublicKey; mint: Mint }> {
  const key = new PublicKey(mint);
  const info = await chain.getAccountInfo(key);
  if (!info) throw new Error(`mint ${mint} not found on chain`);
  return { owner: info.owner, mint: unpackMint(key, info, info.owner) };
}

/** Base-unit balance of `owner`'s associated token account. */
export function ataBalance(chain: ChainBackend, mint: string, owner: string, programId: PublicKey): Promise<bigint> {
  return readAtaBalance(chain, new PublicKey(mint), new PublicKey(owner), programId);
}
