import { afterEach, describe, expect, it } from 'vitest';
import { PublicKey } from '@solana/web3.js';
import { NATIVE_MINT, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync, unpackAccount, unpackMint } from '@solana/spl-token';
import { createPool } from '../../src/chain/steps/createPool.js';
import { splitSupply } from '../../src/chain/steps/allocations.js';
import { decodePoolState } from '../../src/chain/programs/cpmm/poolState.js';
import { CPMM_MAINNET_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import type { LaunchPlan } from '../../src/chain/steps/types.js';
import { fullPlan, startLaunch, type EmbeddedLaunch } from './support/embeddedLaunch.js';
import { haveBinaries, needs } from './support/binaries.js';

const CPMM = CPMM_MAINNET_PROGRAM_ID;

interface PoolResult { address: string; lpMint: string; lpTokenAccount: string; lpAmount: string }

describe.skipIf(!haveBinaries(CPMM.toBase58()))(`create_pool on the real Raydium CPMM program${needs(CPMM.toBase58())}`, () => {
  let launch: EmbeddedLaunch | undefined;
  afterEach(async () => {
    await launch?.close();
    launch = undefined;
  });

  async function tokenAmount(l: EmbeddedLaunch, account: PublicKey, programId: PublicKey): Promise<bigint> {
    return unpackAccount(account, await l.chain.getAccountInfo(account), programId).amount;
  }

  async function checkPool(plan: LaunchPlan, programId: PublicKey) {
    launch = await startLaunch(plan);
    const l = launch;
    const outcome = await l.run('create_pool', createPool);
    const pool = outcome.result.pool as PoolResult;
    expect(outcome.transactions).toEqual([{ type: 'pool', signature: expect.any(String) }]);
    const mint = l.harness.context('create_pool').keys.mint.publicKey;

    const state = decodePoolState((await l.chain.getAccountInfo(new PublicKey(pool.address)))?.data ?? Buffer.alloc(0));
    expect(state.lpMint.toBase58()).toBe(pool.lpMint);
    expect(Buffer.compare(state.token0Mint.toBuffer(), state.token1Mint.toBuffer())).toBe(-1);
    const [tokenVault, quoteVault] = state.token0Mint.equals(mint) ? [state.token0Vault, state.token1Vault] : [state.token1Vault, state.token0Vault];
    expect((state.token0Mint.equals(NATIVE_MINT) ? state.token1Mint : state.token0Mint).equals(mint)).toBe(true);
    expect(await tokenAmount(l, tokenVault, programId)).toBe(splitSupply(plan).find((s) => s.kind === 'pool')?.amount);
    expect(await tokenAmount(l, quoteVault, TOKEN_PROGRAM_ID)).toBe(5_000_000_000n);

    const lpMint = unpackMint(state.lpMint, await l.chain.getAccountInfo(state.lpMint), TOKEN_PROGRAM_ID);
    expect(lpMint.supply > 0n).toBe(true);
    const creatorLp = getAssociatedTokenAddressSync(state.lpMint, new PublicKey(plan.creator));
    expect(pool.lpTokenAccount).toBe(creatorLp.toBase58());
    expect(await tokenAmount(l, creatorLp, TOKEN_PROGRAM_ID)).toBe(lpMint.supply);
    expect(BigInt(pool.lpAmount)).toBe(lpMint.supply);
    // The payer keeps neither LP tokens nor a wrapped-SOL account.
    expect(await l.chain.getAccountInfo(getAssociatedTokenAddressSync(state.lpMint, l.chain.payer.publicKey))).toBeNull();
    expect(await l.chain.getAccountInfo(getAssociatedTokenAddressSync(NATIVE_MINT, l.chain.payer.publicKey))).toBeNull();
    return pool;
  }

  it('seeds a SOL pool with the pool allocation and the quote amount, LP tokens to the creator', async () => {
    await checkPool(fullPlan(), TOKEN_PROGRAM_ID);
  });

  it('seeds a pool for a Token-2022 mint', async () => {
    await checkPool(fullPlan({ tokenStandard: 'token-2022', dao: undefined }), TOKEN_2022_PROGRAM_ID);
  });

  it('pays the configured pool-creation fee into the fee receiver', async () => {
    launch = await startLaunch(fullPlan());
    const receiver = new PublicKey('DNXgeM9EiiaAbaWvwjHj9fQQLAX5ZsfHyvmYUNRAdNC8');
    const before = await tokenAmount(launch, receiver, TOKEN_PROGRAM_ID);
    await launch.run('create_pool', createPool);
    expect((await tokenAmount(launch, receiver, TOKEN_PROGRAM_ID)) - before).toBe(150_000_000n);
  });

  it('creates no second pool when run again, with or without the recorded transaction', async () => {
    launch = await startLaunch(fullPlan());
    const first = await launch.run('create_pool', createPool);
    const again = await launch.run('create_pool', createPool);
    expect(again.transactions).toEqual(first.transactions);
    launch.harness.pending.create_pool = {};
    const afterLostRecord = await launch.run('create_pool', createPool);
    expect(afterLostRecord.result).toEqual(first.result);
    expect(afterLostRecord.transactions).toEqual([]);
  });
});
