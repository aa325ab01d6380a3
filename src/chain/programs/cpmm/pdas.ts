import { PublicKey } from '@solana/web3.js';

const pda = (seeds: Buffer[], programId: PublicKey): PublicKey => PublicKey.findProgramAddressSync(seeds, programId)[0];

/** Authority over every pool's vaults and LP mint: ["vault_and_lp_mint_auth_seed"]. */
export function cpmmAuthorityAddress(programId: PublicKey): PublicKey {
  return pda([Buffer.from('vault_and_lp_mint_auth_seed')], programId);
}

/** An AmmConfig: ["amm_config", index as u16 big-endian]. */
export function ammConfigAddress(programId: PublicKey, index: number): [PublicKey, number] {
  const seed = Buffer.alloc(2);
  seed.writeUInt16BE(index);
  return PublicKey.findProgramAddressSync([Buffer.from('amm_config'), seed], programId);
}

/** A pool: ["pool", ammConfig, token0Mint, token1Mint] (mints in program order, see {@link orderMints}). */
export function poolAddress(programId: PublicKey, ammConfig: PublicKey, token0: PublicKey, token1: PublicKey): PublicKey {
  return pda([Buffer.from('pool'), ammConfig.toBuffer(), token0.toBuffer(), token1.toBuffer()], programId);
}

/** The pool's LP mint: ["pool_lp_mint", pool]. */
export function lpMintAddress(programId: PublicKey, pool: PublicKey): PublicKey {
  return pda([Buffer.from('pool_lp_mint'), pool.toBuffer()], programId);
}

/** A pool vault: ["pool_vault", pool, mint]. */
export function vaultAddress(programId: PublicKey, pool: PublicKey, mint: PublicKey): PublicKey {
  return pda([Buffer.from('pool_vault'), pool.toBuffer(), mint.toBuffer()], programId);
}

/** The pool's price oracle: ["observation", pool]. */
export function observationAddress(programId: PublicKey, pool: PublicKey): PublicKey {
  return pda([Buffer.from('observation'), pool.toBuffer()], programId);
}

/**
 * The two mints in the order the program demands (`token_0_mint < token_1_mint`, comparing the
 * 32 key bytes). `swapped` is true when `b` comes first.
 */
export function orderMints(a: PublicKey, b: PublicKey): { token0: PublicKey; token1: PublicKey; swapped: boolean } {
  const cmp = Buffer.compare(a.toBuffer(), b.toBuffer());
  if (cmp === 0) throw new Error('a pool needs two different mints');
  return cmp < 0 ? { token0: a, token1: b, swapped: false } : { token0: b, token1: a, swapped: true };
}
