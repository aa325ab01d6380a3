import { TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { Keypair, PublicKey } from '@solana/web3.js';
import { describe, expect, it } from 'vitest';
import { claimWsolAccount, leUint, pendingPositionFees, type DammPositionState } from '../../src/chain/programs/dbc/dammPosition.js';

// The DAMM v2 position fee arithmetic (docs/programs.md, "DAMM v2 position fees"); needs no binaries.
const position = (over: Partial<DammPositionState> = {}): DammPositionState => ({
  pool: PublicKey.default,
  nftMint: PublicKey.default,
  feeAPerTokenCheckpoint: 0n,
  feeBPerTokenCheckpoint: 0n,
  feeAPending: 0n,
  feeBPending: 0n,
  unlockedLiquidity: 0n,
  vestedLiquidity: 0n,
  permanentLockedLiquidity: 0n,
  ...over,
});
const Q128 = 1n << 128n;

describe('DAMM v2 position fees', () => {
  it('adds every kind of liquidity times the growth since the checkpoint, shifted down 128 bits (floor), to what is pending', () => {
    // liquidity 2^64 + 7 (3 + 4 + 2^64 of the three kinds), growth 3.5·2^64 in Q128: 3.5 + 24.5/2^64 → 3, plus 7 pending.
    const p = position({ unlockedLiquidity: 3n, vestedLiquidity: 4n, permanentLockedLiquidity: 1n << 64n, feeAPending: 7n, feeBPending: 11n, feeAPerTokenCheckpoint: Q128, feeBPerTokenCheckpoint: 2n * Q128 });
    const pool = { feeAPerLiquidity: Q128 + 7n * (1n << 63n), feeBPerLiquidity: 2n * Q128 };
    expect(pendingPositionFees(pool, p)).toEqual({ a: 10n, b: 11n });
    expect(pendingPositionFees({ ...pool, feeAPerLiquidity: Q128 + 8n * (1n << 63n) }, p).a).toBe(4n + 7n);
  });

  it('a position without liquidity has only its pending fee; a checkpoint above the pool or a fee past u64 throws as the program fails', () => {
    expect(pendingPositionFees({ feeAPerLiquidity: 5n * Q128, feeBPerLiquidity: 0n }, position({ feeAPending: 2n, feeAPerTokenCheckpoint: 9n * Q128 }))).toEqual({ a: 2n, b: 0n });
    expect(() => pendingPositionFees({ feeAPerLiquidity: 1n, feeBPerLiquidity: 0n }, position({ unlockedLiquidity: 1n, feeAPerTokenCheckpoint: 2n }))).toThrow(/checkpoint/);
    expect(() => pendingPositionFees({ feeAPerLiquidity: Q128 << 64n, feeBPerLiquidity: 0n }, position({ unlockedLiquidity: 1n }))).toThrow(/u64/);
  });

  it('reads the U256 fields little-endian', () => {
    const bytes = new Uint8Array(32);
    bytes[0] = 1;
    bytes[16] = 2;
    expect(leUint(bytes)).toBe(1n + 2n * Q128);
  });

  it("a claim's wrapped-SOL account is the wallet's createWithSeed address, fixed by the claim and the position", async () => {
    const wallet = Keypair.generate().publicKey;
    const { address, seed } = claimWsolAccount(wallet, 'fcl_1', 'pos');
    expect(seed).toHaveLength(32);
    expect(address.equals(await PublicKey.createWithSeed(wallet, seed, TOKEN_PROGRAM_ID))).toBe(true);
    expect(claimWsolAccount(wallet, 'fcl_1', 'pos').address.equals(address)).toBe(true);
    expect(claimWsolAccount(wallet, 'fcl_2', 'pos').address.equals(address)).toBe(false);
  });
});
