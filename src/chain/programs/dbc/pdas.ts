import { PublicKey } from '@solana/web3.js';

/** DBC's one pool authority: `["pool_authority"]`; owns every curve's vaults. */
export function dbcPoolAuthority(programId: PublicKey): PublicKey {
  return PublicKey.findProgramAddressSync([Buffer.from('pool_authority')], programId)[0];
}

/** The curve (virtual pool) of a config and mint pair: `["pool", config, max(base, quote), min(base, quote)]`. */
export function dbcPoolAddress(programId: PublicKey, config: PublicKey, baseMint: PublicKey, quoteMint: PublicKey): PublicKey {
  const [first, second] = Buffer.compare(baseMint.toBuffer(), quoteMint.toBuffer()) > 0 ? [baseMint, quoteMint] : [quoteMint, baseMint];
  return PublicKey.findProgramAddressSync([Buffer.from('pool'), config.toBuffer(), first.toBuffer(), second.toBuffer()], programId)[0];
}

/** A curve's token vault for one mint: `["token_vault", mint, pool]`. */
export function dbcVaultAddress(programId: PublicKey, pool: PublicKey, mint: PublicKey): PublicKey {
  return PublicKey.findProgramAddressSync([Buffer.from('token_vault'), mint.toBuffer(), pool.toBuffer()], programId)[0];
}
