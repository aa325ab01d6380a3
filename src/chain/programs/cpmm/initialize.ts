import { PublicKey, SystemProgram, SYSVAR_RENT_PUBKEY, TransactionInstruction } from '@solana/web3.js';
import { ASSOCIATED_TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { instructionDiscriminator } from '../anchor.js';
import { LayoutWriter } from '../borsh.js';
import type { CpmmDeployment } from '../programIds.js';
import { ammConfigAddress, cpmmAuthorityAddress, lpMintAddress, observationAddress, poolAddress, vaultAddress } from './pdas.js';

/** One side of a pool: its mint, that mint's token program, the creator's account and the deposit. */
export interface PoolSide {
  mint: PublicKey;
  tokenProgram: PublicKey;
  creatorToken: PublicKey;
  amount: bigint;
}

/** Every address a pool occupies, decided before anything is sent. */
export interface PoolAddresses {
  ammConfig: PublicKey;
  authority: PublicKey;
  pool: PublicKey;
  lpMint: PublicKey;
  vault0: PublicKey;
  vault1: PublicKey;
  observation: PublicKey;
  creatorLpToken: PublicKey;
}

/** The pool addresses for two mints already in program order (`token0 < token1`). */
export function poolAddresses(deployment: CpmmDeployment, creator: PublicKey, token0: PublicKey, token1: PublicKey): PoolAddresses {
  const { programId } = deployment;
  const [ammConfig] = ammConfigAddress(programId, deployment.ammConfigIndex);
  const pool = poolAddress(programId, ammConfig, token0, token1);
  const lpMint = lpMintAddress(programId, pool);
  return {
    ammConfig,
    authority: cpmmAuthorityAddress(programId),
    pool,
    lpMint,
    vault0: vaultAddress(programId, pool, token0),
    vault1: vaultAddress(programId, pool, token1),
    observation: observationAddress(programId, pool),
    // The program creates the creator's LP account as an SPL Token ATA of the LP mint.
    creatorLpToken: getAssociatedTokenAddressSync(lpMint, creator, false, TOKEN_PROGRAM_ID),
  };
}

/**
 * CPMM `initialize(init_amount_0, init_amount_1, open_time)` with the pool at its canonical PDA.
 * `side0.mint` must sort before `side1.mint`; `openTime` 0 opens trading at once.
 */
export function initializeInstruction(
  deployment: CpmmDeployment,
  creator: PublicKey,
  side0: PoolSide,
  side1: PoolSide,
  openTime = 0n,
): TransactionInstruction {
  if (Buffer.compare(side0.mint.toBuffer(), side1.mint.toBuffer()) >= 0) {
    throw new Error('CPMM initialize: token_0 mint must sort before token_1 mint');
  }
  const a = poolAddresses(deployment, creator, side0.mint, side1.mint);
  const w = (pubkey: PublicKey) => ({ pubkey, isSigner: false, isWritable: true });
  const r = (pubkey: PublicKey) => ({ pubkey, isSigner: false, isWritable: false });
  return new TransactionInstruction({
    programId: deployment.programId,
    keys: [
      { pubkey: creator, isSigner: true, isWritable: true },
      r(a.ammConfig),
      r(a.authority),
      w(a.pool),
      r(side0.mint),
      r(side1.mint),
      w(a.lpMint),
      w(side0.creatorToken),
      w(side1.creatorToken),
      w(a.creatorLpToken),
      w(a.vault0),
      w(a.vault1),
      w(deployment.createPoolFeeReceiver),
      w(a.observation),
      r(TOKEN_PROGRAM_ID),
      r(side0.tokenProgram),
      r(side1.tokenProgram),
      r(ASSOCIATED_TOKEN_PROGRAM_ID),
      r(SystemProgram.programId),
      r(SYSVAR_RENT_PUBKEY),
    ],
    data: Buffer.concat([
      instructionDiscriminator('initialize'),
      new LayoutWriter().u64(side0.amount).u64(side1.amount).u64(openTime).toBuffer(),
    ]),
  });
}

/** Locked forever in the pool by the program at creation (never minted to anyone). */
export const LOCKED_LP_AMOUNT = 100n;

/** Integer square root (floor), as the program's `U128::integer_sqrt`. */
export function isqrt(n: bigint): bigint {
  if (n < 0n) throw new RangeError('isqrt of a negative number');
  if (n < 2n) return n;
  let x = n;
  let y = (x + 1n) / 2n;
  while (y < x) {
    x = y;
    y = (x + n / x) / 2n;
  }
  return x;
}

/** LP tokens the creator receives: floor(sqrt(amount0 × amount1)) − 100. */
export function initialLpAmount(amount0: bigint, amount1: bigint): bigint {
  const liquidity = isqrt(amount0 * amount1);
  if (liquidity <= LOCKED_LP_AMOUNT) throw new RangeError('pool deposit too small: liquidity must exceed 100');
  return liquidity - LOCKED_LP_AMOUNT;
}
