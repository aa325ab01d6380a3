import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer, type ChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { readMintBack } from '../chain/support/readBack.js';
import { ComputeBudgetInstruction, ComputeBudgetProgram, TransactionInstruction } from '@solana/web3.js';
import { startChaosProxy, type ChaosProxy } from '../support/chaosProxy.js';
import { testConfig } from '../support/config.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

// A real JSON-RPC server over the embedded chain (what `npm run chain` serves) behind a chaos proxy
// of our own; the service reaches it only through SOLANA_RPC_URL, as it would a public provider.
const SEED = Number(process.env.CHAOS_SEED ?? 35);

/** About one request in six fails; a sixth of the sends are accepted and dropped. */
const BAD_DAY = { rateLimit: 0.045, retryAfterSeconds: 1, unavailable: 0.045, lostAnswer: 0.04, latency: 0.04, latencyMs: 400, droppedSend: 0.17 };

/** The outage of the outage test (CHAOS_OUTAGE_MS; a short one, e.g. 8000, for a quick run by hand). */
const OUTAGE_MS = Number(process.env.CHAOS_OUTAGE_MS ?? 90_000);
/** Launches of the bad-day test (CHAOS_LAUNCHES). */
const LAUNCHES = Number(process.env.CHAOS_LAUNCHES ?? 20);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('launches against a cluster having a bad day', () => {
  let nodeDir: ReturnType<typeof testConfig>;
  let nodeDb: OpenedDatabase;
  let node: EmbeddedBackend;
  let server: ChainRpcServer;
  let payerPath: string;
  const open: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    nodeDir = testConfig();
    nodeDb = openDatabase(join(nodeDir.dir, 'node.sqlite'));
    await migrateToLatest(nodeDb.db);
    node = await createEmbeddedBackend({ db: nodeDb.db, secretKey: Buffer.alloc(32, 7), clock: systemClock, logger: silentLogger() });
    server = await startChainRpcServer({ chain: node, host: '127.0.0.1', port: 0, logger: silentLogger() });
    const payer = Keypair.generate();
    payerPath = join(nodeDir.dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    await node.airdrop(payer.publicKey, 100n * BigInt(LAMPORTS_PER_SOL));
  });
  afterAll(async () => {
    for (const o of open.reverse()) await o.close();
    await server?.close();
    await node?.close();
    await nodeDb?.close();
    nodeDir?.cleanup();
  });

  async function proxy(toxics = {}, seed = SEED): Promise<ChaosProxy> {
    const p = await startChaosProxy({ target: server.url, seed, toxics });
    open.push(p);
    return p;
  }

  async function service(env: Record<string, string>): Promise<TestService> {
    const t = await startTestService({ env: { SOLANA_PAYER_KEYPAIR: payerPath, SOLANA_RPC_TIMEOUT: '1s', RUNNER_CONCURRENCY: '4', ...env } });
    open.push(t);
    return t;
  }

  /** Waits (real time: the network is real) until every launch is complete or failed, or `timeoutMs` passes. */
  async function settle(t: TestService, ids: string[], timeoutMs: number): Promise<Map<string, string>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await t.service.db.selectFrom('launches').select(['id', 'status']).where('id', 'in', ids).execute();
      const statuses = new Map(rows.map((r) => [r.id, r.status as string]));
      if (rows.every((r) => r.status === 'complete' || r.status === 'failed') || Date.now() > deadline) return statuses;
      await sleep(250);
    }
  }

  /** An API key of `acme` whose funding wallet holds 100 SOL on the chain (the owner pays its launches). */
  async function fundedKey(t: TestService): Promise<string> {
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const res = await t.request('/api/funding', { key });
    const { address } = ((await res.json()) as { funding: { address: string } }).funding;
    await node.airdrop(new PublicKey(address), 100n * BigInt(LAMPORTS_PER_SOL));
    return key;
  }

  const eventsOf = (t: TestService, id: string) =>
    t.service.db.selectFrom('outbox_events').select(['event', 'sequence']).where('launch_id', '=', id).orderBy('sequence').execute();

  it(`completes ${LAUNCHES} token-2022 launches through about one fault in six, none failed, every supply exact (seed ${SEED})`, async () => {
    const chaos = await proxy(BAD_DAY);
    const t = await service({ SOLANA_RPC_URL: chaos.url });
    const key = await fundedKey(t);
    const supplies = Array.from({ length: LAUNCHES }, (_, i) => ({ totalSupply: String(1000 + i * 37), decimals: i % 10 }));
    const ids: string[] = [];
    for (const s of supplies) ids.push(await t.createLaunch(key, launchBody(s)));
    const started = Date.now();
    t.service.runner.start();
    const statuses = await settle(t, ids, 240_000);
    const elapsedMs = Date.now() - started;

    expect([...statuses.values()]).toEqual(ids.map(() => 'complete'));
    for (const [i, id] of ids.entries()) {
      const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      const { mint } = await readMintBack(node, launch.results.mint);
      expect(mint.supply).toBe(BigInt(supplies[i]!.totalSupply) * 10n ** BigInt(supplies[i]!.decimals));
      const events = await eventsOf(t, id);
      expect(events.map((e) => e.event)).toEqual(['launch.queued', 'launch.processing', 'launch.step_complete', 'launch.step_complete', 'launch.step_complete', 'launch.complete']);
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, n) => n + 1));
    }
    expect(await t.service.db.selectFrom('dead_letters').selectAll().execute()).toHaveLength(0);
    // The proxy really had a bad day: every kind of fault happened, about one request in six.
    const injected = Object.values(chaos.faults).reduce((a, b) => a + b, 0);
    for (const kind of ['rateLimit', 'unavailable', 'lostAnswer', 'latency', 'droppedSend'] as const) expect(chaos.faults[kind]).toBeGreaterThan(0);
    expect(injected / chaos.requests.length).toBeGreaterThan(0.1);
    console.info(`chaos seed ${SEED}: ${LAUNCHES} launches in ${elapsedMs} ms through ${chaos.requests.length} requests, faults ${JSON.stringify(chaos.faults)}`);
  }, 300_000);

  it('loses seconds, not a blockhash lifetime, to sends a leader drops: the same bytes go out again every ~2 s', async () => {
    const chaos = await proxy({ droppedSend: 0.5 }, SEED + 1);
    const t = await service({ SOLANA_RPC_URL: chaos.url });
    const key = await fundedKey(t);
    const ids = [await t.createLaunch(key), await t.createLaunch(key)];
    const started = Date.now();
    t.service.runner.start();
    const statuses = await settle(t, ids, 60_000);
    expect([...statuses.values()]).toEqual(['complete', 'complete']);
    expect(chaos.faults.droppedSend).toBeGreaterThan(0);
    // A blockhash lives 150 slots (60 s here); waiting for it to expire before re-signing would cost that per drop.
    // The bound sits well under that one wait and well above the re-sends' seconds on a loaded machine.
    expect(Date.now() - started).toBeLessThan(45_000);
    for (const id of ids) {
      const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      // Every step's transaction landed under its first signature: re-sent, never re-signed.
      for (const step of launch.steps) for (const tx of step.transactions) expect(tx.signature).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
      expect(await t.service.db.selectFrom('launch_steps').select('pending_tx').where('launch_id', '=', id).execute()).not.toContainEqual(expect.objectContaining({ pending_tx: expect.stringContaining('earlier') }));
    }
  }, 90_000);

  it('fails a launch whose fault outlasts LAUNCH_TRANSIENT_DEADLINE, with a message that says so, and waits before that', async () => {
    const chaos = await proxy();
    const t = await service({ SOLANA_RPC_URL: chaos.url, LAUNCH_TRANSIENT_DEADLINE: '4s', SOLANA_RPC_BREAKER_RESET: '1s' });
    const key = await fundedKey(t);
    const id = await t.createLaunch(key);
    chaos.setToxics({ unavailable: 1 });
    t.service.runner.start();
    // While the fault lasts the step waits, with its cause and next try, and no launch.failed.
    let waiting: any;
    for (let i = 0; i < 40 && !waiting; i++) {
      const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      waiting = launch.steps.find((s: any) => s.status === 'waiting');
      if (!waiting) await sleep(100);
    }
    expect(waiting).toMatchObject({ name: 'create_mint', waitingFor: 'rpc_unavailable' });
    expect(Date.parse(waiting.nextAttemptAt)).toBeGreaterThan(Date.parse(waiting.waitingSince));
    expect((await eventsOf(t, id)).map((e) => e.event)).not.toContain('launch.failed');

    const statuses = await settle(t, [id], 30_000);
    expect(statuses.get(id)).toBe('failed');
    const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
    expect(launch.error.step).toBe('create_mint');
    expect(launch.error.message).toMatch(/503 Service Unavailable.*still failing \d+ s after the step's first transient failure, past LAUNCH_TRANSIENT_DEADLINE/);
    const waited = Date.parse(launch.completedAt) - Date.parse(waiting.waitingSince);
    expect(waited).toBeGreaterThanOrEqual(4000);
    expect((await eventsOf(t, id)).map((e) => e.event).filter((e) => e === 'launch.failed')).toHaveLength(1);
  }, 60_000);

  it('rides out an RPC outage in the middle of 10 launches: all complete after it, none failed, each supply minted once; health fails during it and passes after', async () => {
    const chaos = await proxy();
    const t = await service({ SOLANA_RPC_URL: chaos.url, SOLANA_RPC_BREAKER_RESET: '2s', HEALTH_CACHE_MS: '0' });
    const key = await fundedKey(t);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await t.createLaunch(key, launchBody({ totalSupply: String(5000 + i), decimals: 3 })));
    t.service.runner.start();
    // The outage starts once some launches are under way and others are not yet.
    while ((await t.service.db.selectFrom('launches').select('id').where('status', '=', 'complete').execute()).length < 2) await sleep(50);
    chaos.down(OUTAGE_MS);
    const during = await t.request('/api/health');
    expect(during.status).toBe(503);
    expect(((await during.json()) as any).checks.chain.status).toBe('fail');
    const statuses = await settle(t, ids, OUTAGE_MS + 120_000);
    expect([...statuses.values()]).toEqual(ids.map(() => 'complete'));
    expect(chaos.faults.outage).toBeGreaterThan(0);
    for (const [i, id] of ids.entries()) {
      const launch = ((await (await t.request(`/api/launches/${id}`, { key })).json()) as any).launch;
      expect((await readMintBack(node, launch.results.mint)).mint.supply).toBe(BigInt(5000 + i) * 1000n);
      expect((await eventsOf(t, id)).map((e) => e.event)).not.toContain('launch.failed');
    }
    const after = (await (await t.request('/api/health')).json()) as any;
    expect(after.checks.chain.status).toBe('pass');
  }, OUTAGE_MS + 180_000);

  it('prices each transaction from recent prioritization fees, capped by PRIORITY_FEE_MAX_MICROLAMPORTS, with a unit limit from simulation', async () => {
    const chaos = await proxy();
    // The provider's view: 75th percentile 9 000 micro-lamports, above the 5 000 cap.
    chaos.answer('getRecentPrioritizationFees', [1000, 3000, 9000, 20000].map((fee, i) => ({ slot: 100 + i, prioritizationFee: fee })));
    const t = await service({ SOLANA_RPC_URL: chaos.url, PRIORITY_FEE_MAX_MICROLAMPORTS: '5000' });
    const key = await fundedKey(t);
    const id = await t.createLaunch(key);
    t.service.runner.start();
    expect((await settle(t, [id], 60_000)).get(id)).toBe('complete');
    const steps = await t.service.db.selectFrom('launch_steps').select(['name', 'pending_tx', 'transactions']).where('launch_id', '=', id).execute();
    let checked = 0;
    for (const step of steps) {
      for (const [, pending] of Object.entries(JSON.parse(step.pending_tx ?? '{}') as Record<string, any>)) {
        expect(pending.computeBudget.priorityFeeMicroLamports).toBe(5000);
        const limit = pending.computeBudget.computeUnitLimit as number;
        expect(limit).toBeGreaterThan(1000);
        expect(limit).toBeLessThan(200_000);
        // What landed on chain carries exactly that budget.
        const landed = await node.history.getTransaction(pending.signature);
        const budget = landed!.instructions
          .filter((ix) => ix.programId === ComputeBudgetProgram.programId.toBase58())
          .map((ix) => new TransactionInstruction({ programId: ComputeBudgetProgram.programId, keys: [], data: Buffer.from(ix.data) }));
        expect(budget.map((ix) => ComputeBudgetInstruction.decodeInstructionType(ix)).sort()).toEqual(['SetComputeUnitLimit', 'SetComputeUnitPrice']);
        const price = budget.find((ix) => ComputeBudgetInstruction.decodeInstructionType(ix) === 'SetComputeUnitPrice')!;
        const units = budget.find((ix) => ComputeBudgetInstruction.decodeInstructionType(ix) === 'SetComputeUnitLimit')!;
        expect(Number(ComputeBudgetInstruction.decodeSetComputeUnitPrice(price).microLamports)).toBe(5000);
        expect(ComputeBudgetInstruction.decodeSetComputeUnitLimit(units).units).toBe(limit);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it('completes launches through the fallback endpoint while the primary refuses everything; health shows each endpoint', async () => {
    const primary = await proxy();
    const fallback = await proxy();
    primary.down();
    const t = await service({ SOLANA_RPC_URL: `${primary.url},${fallback.url}`, HEALTH_CACHE_MS: '0' });
    const key = await fundedKey(t);
    const ids = [await t.createLaunch(key), await t.createLaunch(key)];
    t.service.runner.start();
    const statuses = await settle(t, ids, 60_000);
    expect([...statuses.values()]).toEqual(['complete', 'complete']);
    expect(primary.faults.outage).toBeGreaterThan(0);

    const health = (await (await t.request('/api/health')).json()) as any;
    expect(health.checks.chain.status).toBe('pass');
    expect(health.checks.chain.endpoints).toEqual([
      expect.objectContaining({ host: new URL(primary.url).host, status: 'fail' }),
      expect.objectContaining({ host: new URL(fallback.url).host, status: 'pass' }),
    ]);
    fallback.down();
    const down = await t.request('/api/health');
    const report = (await down.json()) as any;
    expect(down.status).toBe(503);
    expect(report.checks.chain.status).toBe('fail');
    expect(report.checks.chain.endpoints.map((e: any) => e.status)).toEqual(['fail', 'fail']);
  }, 90_000);
});
