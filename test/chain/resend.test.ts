import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Keypair, SystemProgram } from '@solana/web3.js';
import { classifyTransactionFailure } from '../../src/chain/errors.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { sendIdempotent } from '../../src/chain/send.js';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';

describe('resend rules', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let chain: EmbeddedBackend;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 3), clock, logger: silentLogger() });
  });
  afterEach(async () => {
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });

  it('checks the postcondition before failing on a transaction error: a failed transaction whose effect is on chain is success', async () => {
    const target = Keypair.generate();
    await chain.airdrop(target.publicKey, 1_000_000n);
    const ctx = new StepHarness(chain, samplePlan()).context('create_mint');
    const spec = {
      label: 'fund',
      type: 'test',
      // Creating an account that already exists fails inside the System program; yet the effect
      // this step wants (the account exists, funded) is already there.
      instructions: () => [SystemProgram.createAccount({ fromPubkey: chain.payer.publicKey, newAccountPubkey: target.publicKey, space: 0, lamports: 1_000_000, programId: SystemProgram.programId })],
      signers: [target],
      rentLamports: 0,
      postcondition: async () => ((await chain.getAccountInfo(target.publicKey))?.lamports ?? 0) >= 1_000_000,
    };
    await expect(sendIdempotent(ctx, spec)).resolves.toMatchObject({ via: 'postcondition' });
    // And on resume, the recorded failed transaction is judged by the same postcondition.
    await expect(sendIdempotent(ctx, spec)).resolves.toMatchObject({ via: 'postcondition' });
  });

  it('keeps every signature a step signed: a re-sign after the blockhash expired records the earlier one too', async () => {
    const harness = new StepHarness(chain, samplePlan());
    harness.crashAfterRecord = new Error('simulated crash');
    await expect(harness.run('create_mint')).rejects.toThrow('simulated crash');
    const first = harness.pending.create_mint?.create_mint;
    if (!first) throw new Error('nothing recorded');
    clock.advance(2 * 60_000); // past lastValidBlockHeight
    const minted = await harness.run('create_mint');
    const record = harness.pending.create_mint?.create_mint;
    expect(record?.signature).toBe(minted.transactions[0]?.signature);
    expect(record?.signature).not.toBe(first.signature);
    expect(record?.earlier).toEqual([{ signature: first.signature, lastValidBlockHeight: first.lastValidBlockHeight }]);
  });

  it('classifies a created account short of rent as our sizing (retriable), and only the fee payer short of funds as insufficient_balance', () => {
    const created = classifyTransactionFailure('FailedTransactionMetadata { err: InsufficientFundsForRent { account_index: 1 }, meta: … }');
    expect(created).toBeInstanceOf(TransientError);
    expect(created).toMatchObject({ code: 'account_underfunded' });
    const rpc = classifyTransactionFailure('Transaction simulation failed: Transaction results in an account (2) with insufficient funds for rent');
    expect(rpc).toMatchObject({ code: 'account_underfunded' });
    const payer = classifyTransactionFailure('FailedTransactionMetadata { err: InsufficientFundsForRent { account_index: 0 }, meta: … }');
    expect(payer).toBeInstanceOf(NonRetriableError);
    expect(payer).toMatchObject({ code: 'insufficient_balance' });
  });
});

describe('embedded block height across a restart', () => {
  it('never goes backwards, even when the wall clock did', async () => {
    const tmp = await tempDatabase();
    const clock = manualClock(Date.UTC(2026, 10, 22, 12));
    let opened = await tmp.open();
    let chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 4), clock, logger: silentLogger() });
    clock.advance(3_600_000);
    await new StepHarness(chain, samplePlan()).run('create_mint');
    const before = await chain.getBlockHeight();
    await chain.close();
    await opened.close();
    clock.advance(-3_600_000); // the wall clock steps back an hour before the restart
    opened = await tmp.open();
    chain = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 4), clock, logger: silentLogger() });
    expect(await chain.getBlockHeight()).toBeGreaterThanOrEqual(before);
    await chain.close();
    await opened.close();
    tmp.cleanup();
  });
});
