import { writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import type { OpenedDatabase } from '../../src/db/database.js';
import { manualClock, systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { NonRetriableError, TransientError } from '../../src/lib/retry.js';
import type { ChainBackend } from '../../src/chain/backend.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { createRpcBackend, type RpcBackendOptions } from '../../src/chain/rpc/backend.js';
import { loadKeypairFile } from '../../src/chain/rpc/payerFile.js';
import { readTokenMetadata } from '../../src/chain/programs/token2022/tokenMetadata.js';
import type { StepName } from '../../src/chain/steps/types.js';
import { StepHarness, samplePlan, tempDatabase } from './support/fixtures.js';
import { ataBalance, readMintBack } from './support/readBack.js';
import { startRpcDouble, type RpcDouble } from './support/rpcDouble.js';

describe('RPC backend against a LiteSVM-backed JSON-RPC endpoint', () => {
  let tmp: Awaited<ReturnType<typeof tempDatabase>>;
  let opened: OpenedDatabase;
  let node: EmbeddedBackend;
  let double: RpcDouble;
  let rpc: ChainBackend;
  let payerPath: string;
  const nodeClock = manualClock(Date.UTC(2026, 10, 22, 12));

  const connect = (overrides: Partial<RpcBackendOptions> = {}) =>
    createRpcBackend({
      rpcUrls: [double.url],
      payer: loadKeypairFile(payerPath),
      fees: { priorityFeeMicroLamports: 1000, computeUnitLimit: 300_000 },
      clock: systemClock,
      logger: silentLogger(),
      // Short enough that the injected hangs stay quick, long enough for a busy machine's real requests.
      requestTimeoutMs: 1_500,
      pollIntervalMs: 10,
      // Off unless a test turns it on: on a loaded machine a slow answer would add a hedged request to the counts below.
      readHedgeMs: 0,
      ...overrides,
    });

  /** Runs a step the way the runner does: transient failures are retried, up to `attempts`. */
  async function runWithRetries(harness: StepHarness, step: StepName, attempts = 3) {
    const errors: unknown[] = [];
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        return { outcome: await harness.run(step), errors };
      } catch (error) {
        errors.push(error);
        if (!(error instanceof TransientError)) throw error;
      }
    }
    throw errors.at(-1);
  }

  beforeEach(async () => {
    tmp = await tempDatabase();
    opened = await tmp.open();
    node = await createEmbeddedBackend({ db: opened.db, secretKey: Buffer.alloc(32, 3), clock: nodeClock, logger: silentLogger() });
    double = await startRpcDouble(node);
    const payer = Keypair.generate();
    payerPath = join(dirname(tmp.path), 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    await node.airdrop(payer.publicKey, 50n * BigInt(LAMPORTS_PER_SOL));
    rpc = connect();
  });
  afterEach(async () => {
    await rpc.close();
    await double.close();
    await node.close();
    await opened.close();
    tmp.cleanup();
  });

  it('runs a token-2022 create_mint → create_metadata → distribute_supply and reads the result back', async () => {
    const plan = samplePlan({ revokeMintAuthority: true });
    const harness = new StepHarness(rpc, plan);
    const { result } = await harness.run('create_mint');
    await harness.run('create_metadata');
    const distributed = await harness.run('distribute_supply');
    const mint = result.mint as string;
    const back = await readMintBack(rpc, mint);
    expect(back.owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
    expect(back.mint.mintAuthority).toBeNull();
    expect(readTokenMetadata(back.mint)).toMatchObject({ name: plan.name, symbol: plan.ticker, uri: plan.uri });
    const allocations = distributed.result.allocations as Array<{ owner: string; amount: string; kind: string }>;
    const creatorShare = allocations.find((a) => a.kind === 'creator')?.amount;
    expect(await ataBalance(rpc, mint, plan.creator, TOKEN_2022_PROGRAM_ID)).toBe(BigInt(creatorShare ?? -1));
    expect(double.requests).toContain('sendTransaction');
    expect((await rpc.probe()).payerBalance).toBeGreaterThan(0);
  });

  it.each(['429', 'rate_limited', '503', 'hang', 'lost_response'] as const)(
    'sends the same bytes again after a passing %s on sendTransaction (or sees them landed): no step failure, one signature',
    async (fault) => {
      const plan = samplePlan();
      const harness = new StepHarness(rpc, plan);
      double.inject(fault, 1, 'sendTransaction');
      const { outcome, errors } = await runWithRetries(harness, 'create_mint');
      expect(errors).toEqual([]);
      // A lost answer's transaction was acted on: its status may say so before a second send.
      expect(double.requests.filter((m) => m === 'sendTransaction').length).toBeGreaterThanOrEqual(fault === 'lost_response' ? 1 : 2);
      expect(outcome.transactions[0]?.signature).toBe(harness.pending.create_mint?.create_mint?.signature);
      double.inject(fault, 1);
      await runWithRetries(harness, 'distribute_supply');
      const back = await readMintBack(rpc, outcome.result.mint as string);
      expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
    },
  );

  it('knows a send whose answer was lost went through from its signature status, without waiting out the send timeout', async () => {
    // The send executes and its answer never comes: the step is done once the status shows it, not after
    // the send's 30 s timeout (the 15 s bound is far from it and from the fast path's fraction of a second).
    const patient = connect({ requestTimeoutMs: 30_000 });
    try {
      const plan = samplePlan();
      const harness = new StepHarness(patient, plan);
      double.inject('lost_response', 1, 'sendTransaction');
      const started = Date.now();
      const outcome = await harness.run('create_mint');
      expect(Date.now() - started).toBeLessThan(15_000);
      // One send: the status answered before a second was due.
      expect(double.requests.filter((m) => m === 'sendTransaction')).toHaveLength(1);
      expect(outcome.transactions[0]?.signature).toBe(harness.pending.create_mint?.create_mint?.signature);
      expect(await patient.getSignatureStatus(outcome.transactions[0]?.signature ?? '')).toMatchObject({ err: null });
      expect((await readMintBack(patient, outcome.result.mint as string)).owner.equals(TOKEN_2022_PROGRAM_ID)).toBe(true);
    } finally {
      await patient.close();
    }
  });

  it('sends the same bytes again beside a send that hangs unheard, and the first answer wins', async () => {
    // The first send never reaches the chain and never answers: the same bytes go out again at the
    // rebroadcast interval, land, and the step is done long before the first send's timeout.
    // The 15 s bound is far from the first send's 30 s timeout and from the fast path (about 0.5 s).
    const patient = connect({ requestTimeoutMs: 30_000, rebroadcastIntervalMs: 500 });
    try {
      const plan = samplePlan();
      const harness = new StepHarness(patient, plan);
      double.inject('hang', 1, 'sendTransaction');
      const started = Date.now();
      const outcome = await harness.run('create_mint');
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(double.requests.filter((m) => m === 'sendTransaction')).toHaveLength(2);
      expect(outcome.transactions[0]?.signature).toBe(harness.pending.create_mint?.create_mint?.signature);
      await harness.run('distribute_supply');
      expect((await readMintBack(patient, outcome.result.mint as string)).mint.supply).toBe(plan.totalSupply * 10n ** 9n);
    } finally {
      await patient.close();
    }
  });

  it('turns an injected blockhash_not_found on sendTransaction into a TransientError (blockhash_expired) and succeeds when retried', async () => {
    const plan = samplePlan();
    const harness = new StepHarness(rpc, plan);
    double.inject('blockhash_not_found', 1, 'sendTransaction');
    const { outcome, errors } = await runWithRetries(harness, 'create_mint');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TransientError);
    expect(errors[0]).toMatchObject({ code: 'blockhash_expired' });
    // The retry re-sent the recorded bytes: one signature, one mint.
    expect(outcome.transactions[0]?.signature).toBe(harness.pending.create_mint?.create_mint?.signature);
    await runWithRetries(harness, 'distribute_supply');
    const back = await readMintBack(rpc, outcome.result.mint as string);
    expect(back.mint.supply).toBe(plan.totalSupply * 10n ** 9n);
  });

  it('re-signs after the recorded blockhash really expired on the cluster', async () => {
    const harness = new StepHarness(rpc, samplePlan());
    harness.crashAfterRecord = new Error('simulated crash');
    await expect(harness.run('create_mint')).rejects.toThrow('simulated crash');
    const old = harness.pending.create_mint?.create_mint;
    nodeClock.advance(3 * 60_000);
    const { outcome } = await runWithRetries(harness, 'create_mint');
    expect(outcome.transactions[0]?.signature).not.toBe(old?.signature);
    expect(await rpc.getSignatureStatus(old?.signature ?? '')).toBeNull();
  });

  it('fails with insufficient_balance before sending when the payer is empty', async () => {
    const emptyPath = join(dirname(tmp.path), 'empty.json');
    writeFileSync(emptyPath, JSON.stringify([...Keypair.generate().secretKey]));
    const poor = connect({ payer: loadKeypairFile(emptyPath) });
    try {
      const error = await new StepHarness(poor, samplePlan()).run('create_mint').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetriableError);
      expect(error).toMatchObject({ code: 'insufficient_balance' });
      expect(double.requests).not.toContain('sendTransaction');
    } finally {
      await poor.close();
    }
  });

  it('tries a read again after a passing fault, without surfacing it', async () => {
    const before = double.requests.filter((m) => m === 'getBlockHeight').length;
    double.inject('503', 1, 'getBlockHeight');
    double.inject('429', 1, 'getBlockHeight');
    expect(await rpc.getBlockHeight()).toBeGreaterThan(0);
    expect(double.requests.filter((m) => m === 'getBlockHeight').length - before).toBe(3);
  });

  it('opens its breaker after repeated server errors and then fails fast with breaker_open', async () => {
    const fragile = connect({ breaker: { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 60_000 } });
    try {
      double.inject('503', 5);
      const codes: string[] = [];
      const before = double.requests.length;
      for (let i = 0; i < 5; i++) codes.push(await fragile.getBlockHeight().then(() => 'ok', (e: TransientError) => e.code));
      // The first read tried three times (each a 503), which opened the breaker; the others never left the process.
      expect(codes).toEqual(['rpc_unavailable', 'breaker_open', 'breaker_open', 'breaker_open', 'breaker_open']);
      expect(double.requests.length - before).toBe(3);
      expect(fragile.breakerState?.().state).toBe('open');
    } finally {
      await fragile.close();
    }
  });

  it("backs off for a 429's Retry-After without opening its breaker, where as many 503s open it", async () => {
    const breaker = { volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 60_000 };
    const fragile = connect({ breaker });
    const down = connect({ breaker });
    try {
      // Five different reads at once (web3.js shares one request among identical block-height reads).
      const reads = (backend: ChainBackend) => Promise.all(Array.from({ length: 5 }, () => backend.getBalance(Keypair.generate().publicKey).then(() => 'ok', (e: TransientError) => e.code)));
      double.inject('rate_limited', 5, 'getBalance');
      const started = Date.now();
      const before = double.requests.length;
      // Each read was refused once, waited out the Retry-After (1 s) and was answered; the breaker saw no failure.
      expect(await reads(fragile)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
      expect(double.requests.length - before).toBe(10);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(fragile.breakerState?.()).toEqual({ state: 'closed', failures: 0 });

      // The same five reads against an endpoint answering 503: down, and its breaker opens.
      double.inject('503', 5, 'getBalance');
      expect(await reads(down)).toContain('breaker_open');
      expect(down.breakerState?.().state).toBe('open');
    } finally {
      await fragile.close();
      await down.close();
    }
  });

  it('gives up a lost read after the short read timeout and asks again at once, while sends keep the long one', async () => {
    const quick = connect({ requestTimeoutMs: 60_000, readTimeoutMs: 300 });
    try {
      double.inject('lost_response', 1, 'getBlockHeight');
      const started = Date.now();
      expect(await quick.getBlockHeight()).toBeGreaterThan(0);
      // Only the 300 ms read timeout can end the lost read this soon (the request timeout is 60 s); the rest is room for a loaded machine.
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(double.requests.slice(-2)).toEqual(['getBlockHeight', 'getBlockHeight']);
    } finally {
      await quick.close();
    }
  });

  it('sends a read unanswered after the hedge delay once more beside it, and takes the first answer', async () => {
    const hedging = connect({ readTimeoutMs: 60_000, readHedgeMs: 200 });
    try {
      const owner = Keypair.generate().publicKey;
      await node.airdrop(owner, BigInt(LAMPORTS_PER_SOL));
      double.inject('lost_response', 1, 'getBalance');
      const before = double.requests.length;
      const started = Date.now();
      // The first request is answered never; the second, 200 ms later, is, long before the 60 s timeout
      // (the bound leaves room for a loaded machine and is still a quarter of that timeout).
      expect(await hedging.getBalance(owner)).toBe(LAMPORTS_PER_SOL);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(double.requests.slice(before)).toEqual(['getBalance', 'getBalance']);
      expect(hedging.breakerState?.()).toEqual({ state: 'closed', failures: 0 });
    } finally {
      await hedging.close();
    }
  });
});
