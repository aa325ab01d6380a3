import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Keypair, SystemProgram } from '@solana/web3.js';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import type { ChainBackend } from '../../src/chain/backend.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { sendIdempotent } from '../../src/chain/send.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';
import { readMintBack } from './support/readBack.js';

const crash = () => new Error('simulated crash');

/** The chain, except that the next confirmTransaction "crashes" after the send went out. */
function crashingOnConfirm(chain: ChainBackend): ChainBackend {
  let armed = true;
  return Object.assign(Object.create(chain) as ChainBackend, {
    async confirmTransaction(...args: Parameters<ChainBackend['confirmTransaction']>) {
      if (armed) {
        armed = false;
        throw crash();
      }
      return chain.confirmTransaction(...args);
    },
  });
}

describe('idempotent send', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));
  const secretKey = Buffer.alloc(32, 9);
  const start = () => createEmbeddedBackend({ db: opened.db, secretKey, clock, logger: silentLogger() });

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await start();
  });
  afterEach(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });

  it('re-sends the same bytes after a crash between recording and sending, minting exactly once', async () => {
    const plan = samplePlan();
    const harness = new StepHarness(chain, plan);
    harness.crashAfterRecord = crash();
    await expect(harness.run('create_mint')).rejects.toThrow('simulated crash');
    const recorded = harness.pending.create_mint?.create_mint;
    expect(recorded).toBeDefined();
    expect(await chain.getAccountInfo(harness.context('create_mint').keys.mint.publicKey)).toBeNull();

    const minted = await harness.run('create_mint');
    expect(minted.transactions[0]?.signature).toBe(recorded?.signature);

    harness.crashAfterRecord = crash();
    await expect(harness.run('distribute_supply')).rejects.toThrow('simulated crash');
    await harness.run('distribute_supply');
    await harness.run('distribute_supply'); // a third call finds the recorded, confirmed tx
    const back = await readMintBack(chain, minted.result.mint as string);
    expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
  });

  it('confirms the recorded transaction after a crash between sending and confirming, even across a restart', async () => {
    const plan = samplePlan();
    const harness = new StepHarness(crashingOnConfirm(chain), plan);
    await expect(harness.run('create_mint')).rejects.toThrow('simulated crash');
    const signature = harness.pending.create_mint?.create_mint?.signature;
    expect(await chain.getSignatureStatus(signature ?? '')).toEqual({ status: 'finalized', err: null });

    await chain.close();
    await opened.close();
    opened = await tmp.open();
    chain = await start();
    harness.chain = chain;
    const minted = await harness.run('create_mint');
    expect(minted.transactions[0]?.signature).toBe(signature);

    harness.chain = crashingOnConfirm(chain);
    await expect(harness.run('distribute_supply')).rejects.toThrow('simulated crash');
    harness.chain = chain;
    await harness.run('distribute_supply');
    const back = await readMintBack(chain, minted.result.mint as string);
    expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
  });

  it('re-signs with a fresh blockhash only after the recorded one expired, and the old bytes can no longer land', async () => {
    const plan = samplePlan();
    const harness = new StepHarness(chain, plan);
    harness.crashAfterRecord = crash();
    await expect(harness.run('create_mint')).rejects.toThrow('simulated crash');
    const old = harness.pending.create_mint?.create_mint;
    if (!old) throw new Error('nothing recorded');

    clock.advance(2 * 60_000); // 300 slots: past lastValidBlockHeight
    expect(await chain.getBlockHeight()).toBeGreaterThan(old.lastValidBlockHeight);
    const minted = await harness.run('create_mint');
    const fresh = harness.pending.create_mint?.create_mint;
    expect(fresh?.signature).not.toBe(old.signature);
    expect(fresh?.blockhash).not.toBe(old.blockhash);
    expect(minted.transactions[0]?.signature).toBe(fresh?.signature);

    const replay = await chain.sendRawTransaction(Buffer.from(old.serialized, 'base64')).catch((e: unknown) => e);
    expect(replay).toBeInstanceOf(TransientError);
    expect(replay).toMatchObject({ code: 'blockhash_expired' });
    expect(await chain.getSignatureStatus(old.signature)).toBeNull();
  });

  it('treats a recorded transaction that failed on chain as a program error', async () => {
    const taken = Keypair.generate();
    await chain.airdrop(taken.publicKey, 1_000_000n);
    const harness = new StepHarness(chain, samplePlan());
    const ctx = harness.context('create_mint');
    const spec = {
      label: 'occupied',
      type: 'test',
      // Creating an account that already exists fails inside the System program.
      instructions: () => [
        SystemProgram.createAccount({ fromPubkey: chain.payer.publicKey, newAccountPubkey: taken.publicKey, space: 0, lamports: 1_000_000, programId: SystemProgram.programId }),
      ],
      signers: [taken],
      rentLamports: 0,
      postcondition: async () => false,
    };
    const first = await sendIdempotent(ctx, spec).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(NonRetriableError);
    expect(first).toMatchObject({ code: 'program_error' });
    const again = await sendIdempotent(ctx, spec).catch((e: unknown) => e);
    expect(again).toMatchObject({ code: 'program_error' });
    expect(String((again as Error).message)).toContain('failed on chain');
  });
});
