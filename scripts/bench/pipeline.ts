import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Keypair } from '@solana/web3.js';
import bs58 from 'bs58';
import { sql } from 'kysely';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { deriveLaunchKeys } from '../../src/chain/keys.js';
import { stepExecutors, type StepName } from '../../src/chain/steps/index.js';
import type { PendingTx, StepOutcome } from '../../src/chain/steps/types.js';
import { launchKeySecret } from '../../src/launches/chainStepRunner.js';
import { planFromRequest } from '../../src/launches/plan.js';
import { parseLaunchRequest, storedRequest } from '../../src/launches/request.js';
import type { StepRunner } from '../../src/launches/stepPort.js';
import { stepsFor } from '../../src/launches/steps.js';
import { systemClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createService, type Service } from '../../src/app/service.js';
import { createChainBackend } from '../../src/app/serviceChain.js';
import type { ChainBackend } from '../../src/chain/backend.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { benchConfig } from './config.js';
import { spawnBenchChild } from './child.js';
import { median, result, roundsResult, type BenchResult } from './types.js';

const CONCURRENCY = 2; // the bare side's: one thread, the runner's in-process default
const THREAD_CONCURRENCY = 4; // the runner's default with the chain on its own thread
/**
 * Launches each side runs unmeasured first, in rounds of the measured size. V8's optimizing compiler
 * keeps finding newly hot service code for several hundred launches: in the first 200 launches its
 * background threads compiled 5-7 ms of CPU per launch on the machine's two cores (667 functions,
 * 4.7 s of compile in 440 launches), ~1.5 ms after 600, and the end to end rose from ~70 to ~90
 * launches/s in-process and from ~70 to ~110-120 with the chain thread; the bare chain work, a
 * smaller and hotter set of functions, settles within ~100. A short warm-up measured that
 * compilation against the service.
 */
const WARM_UP = 600;

/** A token-2022 launch (needs no extra program on the embedded chain): mint, metadata, distribution. */
function launchRequest(webhookUrl: string): Record<string, unknown> {
  return {
    name: 'Bench Token',
    ticker: 'BNCH',
    totalSupply: '1000000000',
    decimals: 6,
    uri: 'https://example.com/bench.json',
    tokenStandard: 'token-2022',
    creator: Keypair.generate().publicKey.toBase58(),
    allocations: { creator: 100 },
    revokeMintAuthority: true,
    webhookUrl,
    webhookSecret: 'whsec_bench_0123456789abcdef',
  };
}

/**
 * Waits until every launch is complete. One count per 20 ms: the wait runs inside the measured
 * service process, so polling the launch rows every few milliseconds would bill the bench's own
 * reads to the service (it cost about 6 % of the process in a profile).
 */
async function waitAllComplete(service: Service, ids: string[]): Promise<void> {
  for (;;) {
    const rows = await service.db.selectFrom('launches').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).where('id', 'in', ids).groupBy('status').execute();
    if (rows.some((r) => r.status === 'failed')) throw new Error('pipeline bench: a launch failed');
    if (Number(rows.find((r) => r.status === 'complete')?.n ?? 0) === ids.length) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until every delivery of these launches is delivered (the last events' webhooks trail the completion by ~1 ms). */
async function waitAllDelivered(service: Service, ids: string[]): Promise<void> {
  for (;;) {
    const row = await service.db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('launch_id', 'in', ids).where('status', '!=', 'delivered').executeTakeFirstOrThrow();
    if (Number(row.n) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The request bodies of `count` launches, each with a fresh creator key: the client's work, made before any clock or CPU count starts. */
function requestBodies(webhookUrl: string, count: number): string[] {
  return Array.from({ length: count }, () => JSON.stringify(launchRequest(webhookUrl)));
}

/**
 * End to end: POST /api/launches → runner → complete, and every webhook of those launches delivered
 * to a local receiver (the clock stops at the last one). The
 * request bodies (each with a fresh creator key, {@link requestBodies}) are made before the clock
 * starts, as the bare side makes its plans before its clock: generating a key pair in JavaScript is
 * the client's work, not the service's (it was ~2 % of the measured window, and 3.6 % of the
 * process's CPU in the pipeline-service-cpu window while it was made inside it).
 */
async function endToEnd(service: Service, key: string, bodies: string[]): Promise<number> {
  const count = bodies.length;
  const started = performance.now();
  const ids = await Promise.all(
    bodies.map(async (body) => {
      const res = await service.app.request('/api/launches', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
      if (res.status !== 202) throw new Error(`pipeline bench: create answered ${res.status} ${await res.text()}`);
      return ((await res.json()) as { launch: { id: string } }).launch.id;
    }),
  );
  await waitAllComplete(service, ids);
  await waitAllDelivered(service, ids);
  return count / ((performance.now() - started) / 1000);
}

/**
 * The bare chain work of the same launches: the step executors called directly on one thread, on an
 * in-process embedded chain of their own (its own SQLite file: the service's chain runs on a thread
 * of its own), with the one write the contract requires of any implementation — each signed
 * transaction recorded durably before it is sent (docs/api.md), here one upsert per transaction in a
 * table of its own, committed the way the in-process chain allows (NORMAL, in WAL order with the
 * chain's own commit of it).
 */
async function bareChain(bare: BareChain, secretKey: Buffer, webhookUrl: string, count: number): Promise<number> {
  const master = launchKeySecret(secretKey);
  const logger = silentLogger();
  const pendingDb = bare.db.withTables<{ bench_pending: { id: string; pending: string } }>();
  const recordPending = (id: string) => async (label: string, tx: PendingTx) => {
    const row = { id: `${id}/${label}`, pending: JSON.stringify({ [label]: tx }) };
    await pendingDb.insertInto('bench_pending').values(row).onConflict((oc) => oc.column('id').doUpdateSet({ pending: row.pending })).execute();
  };
  const plans = Array.from({ length: count }, () => {
    const parsed = parseLaunchRequest(launchRequest(webhookUrl), { requireHttps: false });
    if (!parsed.ok) throw new Error('pipeline bench: invalid request');
    const id = newId('lch');
    return { id, steps: stepsFor(parsed.value), plan: planFromRequest(id, storedRequest(parsed.value)) };
  });
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < plans.length) {
      const item = plans[next++]!;
      const results: Record<string, unknown> = {};
      for (const step of item.steps) {
        const executor = stepExecutors[step as StepName];
        if (!executor) throw new Error(`no executor for ${step}`);
        const out = await executor({ plan: item.plan, keys: deriveLaunchKeys(master, item.id), results: { ...results }, pending: {}, recordPending: recordPending(item.id), chain: bare.chain, payer: bare.chain.payer, logger });
        Object.assign(results, out.result);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return count / ((performance.now() - started) / 1000);
}

/**
 * The chain thread's own capacity: the same launches' steps handed straight to the service's step
 * runner (the chain thread), nothing else of the service involved, at the runner's concurrency;
 * each signed transaction recorded before it is sent (one upsert, NORMAL commit, on the service's
 * database). `pipeline-chain-thread` compares the end-to-end rate with this.
 */
async function threadChain(service: Service, runStep: StepRunner, webhookUrl: string, count: number): Promise<number> {
  const pendingDb = service.db.withTables<{ bench_pending: { id: string; pending: string } }>();
  await sql`create table if not exists bench_pending (id text primary key, pending text not null)`.execute(service.db);
  const logger = silentLogger();
  const launches = Array.from({ length: count }, () => {
    const parsed = parseLaunchRequest(launchRequest(webhookUrl), { requireHttps: false });
    if (!parsed.ok) throw new Error('pipeline bench: invalid request');
    return { id: newId('lch'), steps: stepsFor(parsed.value), request: storedRequest(parsed.value) };
  });
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < launches.length) {
      const item = launches[next++]!;
      const results: Record<string, unknown> = {};
      for (const step of item.steps) {
        const out = await runStep({
          launchId: item.id,
          step: step as StepName,
          request: item.request,
          results: { ...results },
          pending: {},
          logger,
          recordPending: async (label, tx) => {
            const row = { id: `${item.id}/${label}`, pending: JSON.stringify({ [label]: tx }) };
            await pendingDb.insertInto('bench_pending').values(row).onConflict((oc) => oc.column('id').doUpdateSet({ pending: row.pending })).execute();
          },
        });
        Object.assign(results, out.result);
      }
    }
  };
  await Promise.all(Array.from({ length: THREAD_CONCURRENCY }, worker));
  return count / ((performance.now() - started) / 1000);
}

interface BareChain {
  db: Db;
  chain: ChainBackend;
  close(): Promise<void>;
}

/** The baseline's chain: the embedded chain in this thread, on a SQLite file of its own. */
async function openBareChain(dir: string, secretKey: Buffer): Promise<BareChain> {
  const database = openDatabase(join(dir, 'bare-chain.sqlite'));
  await migrateToLatest(database.db);
  await sql`create table if not exists bench_pending (id text primary key, pending text not null)`.execute(database.db);
  const chain = await createChainBackend(benchConfig(dir, secretKey), { db: database.db, clock: systemClock, logger: silentLogger() });
  return {
    db: database.db,
    chain,
    async close() {
      await chain.close();
      await database.close();
    },
  };
}

/**
 * The runner's step runner for the bench: the chain's own (remembering each step's last outcome),
 * or, while `replay` is set, that remembered outcome at once — the whole service (API, runner
 * bookkeeping, events, signed deliveries) without any chain work, to measure the service's own
 * cost per launch apart from the chain's.
 */
function replayableSteps(): { wrap(chain: StepRunner): StepRunner; replay: boolean; chain: StepRunner | undefined } {
  const last = new Map<string, StepOutcome>();
  const control = {
    replay: false,
    /** The service's own step runner (the chain thread's), for the chain-thread baseline. */
    chain: undefined as StepRunner | undefined,
    wrap: (chain: StepRunner): StepRunner => async (input) => {
      control.chain = chain;
      const recorded = control.replay ? last.get(input.step) : undefined;
      if (recorded) return freshSignatures(recorded);
      const outcome = await chain(input);
      last.set(input.step, outcome);
      return outcome;
    },
  };
  return control;
}

/**
 * A replayed outcome under signatures of its own: the funding ledger takes one entry per owner and
 * transaction signature (migration 042), so a replay that repeated the recorded signatures was
 * refused at its step's commit, and the launch never completed (the bench hung).
 */
function freshSignatures(outcome: StepOutcome): StepOutcome {
  const renamed = new Map(outcome.transactions.map((t) => [t.signature, bs58.encode(randomBytes(64))]));
  const rename = (signature: string) => renamed.get(signature) ?? bs58.encode(randomBytes(64));
  return {
    result: outcome.result,
    transactions: outcome.transactions.map((t) => ({ type: t.type, signature: rename(t.signature) })),
    ...(outcome.spent ? { spent: outcome.spent.map((s) => ({ signature: rename(s.signature), lamports: s.lamports })) } : {}),
  };
}

type Rounds = Array<{ value: number; baseline: number }>;

/**
 * One service (the chain in-process, or on its own thread) measured in three rounds, each back to
 * back with the bare chain work of as many launches: end to end, and also — in-process — with every
 * step's chain work replayed (`pipeline-service`), or — threaded — the same steps sent straight to
 * its chain thread (`pipeline-chain-thread`).
 */
async function measureService(dir: string, secretKey: Buffer, receiverUrl: string, bare: BareChain, count: number, thread: boolean): Promise<{ rounds: Rounds; extra: Rounds; cpuMsPerLaunch: number[] }> {
  const steps = replayableSteps();
  const service = await createService(benchConfig(dir, secretKey, { CHAIN_THREAD: thread ? 'on' : 'off' }), { logger: silentLogger(), clock: systemClock, wrapStepRunner: steps.wrap });
  try {
    service.start();
    const key = (await createApiKey(service.db, { owner: 'bench', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    // Unmeasured rounds of each side first (see WARM_UP): the service's JIT warm-up is not its
    // throughput (with one round of 20, the first measured round paid it: round ratios 0.37-0.38
    // against 0.39-0.57 after it in runs S-U).
    for (let done = 0; done < WARM_UP; done += count) {
      await endToEnd(service, key, requestBodies(receiverUrl, Math.min(count, WARM_UP - done)));
      await bareChain(bare, secretKey, receiverUrl, Math.min(count, WARM_UP - done));
    }
    const rounds: Rounds = [];
    const extra: Rounds = [];
    const cpuMsPerLaunch: number[] = [];
    for (let round = 0; round < 3; round++) {
      const value = await endToEnd(service, key, requestBodies(receiverUrl, count));
      const baseline = await bareChain(bare, secretKey, receiverUrl, count);
      rounds.push({ value, baseline });
      if (thread) {
        if (!steps.chain) throw new Error('pipeline bench: the service ran no step');
        extra.push({ value, baseline: await threadChain(service, steps.chain, receiverUrl, count) });
      } else {
        steps.replay = true;
        // The process's CPU while the chain work is replayed: the service's own work per launch
        // (API, runner, events, deliveries; the receiver is another process), which the machine's
        // load stretches in wall time but hardly in CPU time.
        const bodies = requestBodies(receiverUrl, count);
        const cpu = process.cpuUsage();
        extra.push({ value: await endToEnd(service, key, bodies), baseline });
        const used = process.cpuUsage(cpu);
        cpuMsPerLaunch.push((used.user + used.system) / 1000 / count);
        steps.replay = false;
      }
    }
    return { rounds, extra, cpuMsPerLaunch };
  } finally {
    await service.stop();
  }
}

/**
 * `pipeline`: launches/s end to end (the shipped default: the chain in-process) vs the bare chain
 * work on one thread, three rounds back to back; medians (see roundsResult). `pipeline-service`
 * (reported): the same end to end with every step's chain work replaced by a recorded outcome: the
 * service's own launches/s. `pipeline-thread` (reported): end to end with CHAIN_THREAD=on vs the same
 * baseline; `pipeline-chain-thread` (reported): that end to end vs its chain thread's own capacity.
 */
export async function benchPipeline(count = 20): Promise<{ results: BenchResult[]; note: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pipeline-'));
  const secretKey = randomBytes(32);
  // The customer's receiver runs in its own process: its HTTP work is not the service's.
  const receiver = await spawnBenchChild<{ url: string }>('receiverChild.ts');
  const bare = await openBareChain(dir, secretKey);
  try {
    const inline = await measureService(join(dir, 'inline'), secretKey, receiver.first.url, bare, count, false);
    const threaded = await measureService(join(dir, 'thread'), secretKey, receiver.first.url, bare, count, true);
    const ratios = (list: Rounds) => list.map((r) => (r.value / r.baseline).toFixed(2)).join(' / ');
    return {
      results: [
        roundsResult('pipeline', inline.rounds, 'launches/s'),
        roundsResult('pipeline-service', inline.extra, 'launches/s'),
        roundsResult('pipeline-thread', threaded.rounds, 'launches/s'),
        roundsResult('pipeline-chain-thread', threaded.extra, 'launches/s'),
        result('pipeline-service-cpu', median(inline.cpuMsPerLaunch), 'ms/launch', 0),
      ],
      note: `${count} token-2022 launches per run (mint, metadata, distribution), embedded chain, after ${WARM_UP} unmeasured launches on each side (rounds of ${count}); end to end: until every launch is complete and every webhook of it delivered; baseline: the bare chain work on one thread (concurrency ${CONCURRENCY}, an in-process chain on a SQLite file of its own), each signed transaction recorded before it is sent, as the contract requires; pipeline: the chain in-process (the default), runner concurrency ${CONCURRENCY}, round ratios ${ratios(inline.rounds)}; pipeline-service: that service with each step's chain work replaced by a recorded outcome, round ratios ${ratios(inline.extra)}; pipeline-thread: CHAIN_THREAD=on, runner concurrency ${THREAD_CONCURRENCY}, round ratios ${ratios(threaded.rounds)}; pipeline-chain-thread: that end to end vs the same steps sent straight to its chain thread, round ratios ${ratios(threaded.extra)}`,
    };
  } finally {
    await bare.close();
    await receiver.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
