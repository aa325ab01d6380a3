import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { unpackMint } from '@solana/spl-token';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createService, type Service } from '../../src/app/service.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startChaosProxy, type ChaosToxics } from '../../test/support/chaosProxy.js';
import { benchConfig } from './config.js';
import { startBenchReceiver } from './receiver.js';
import { percentile, result, type BenchResult } from './types.js';

/**
 * A provider's bad day, every fault kind at once: some requests 429 with `Retry-After: 1`, some 503,
 * some delayed 2 s, some answers lost after the request was acted on (the connection stays silent
 * until the client's timeout), and a third of the sends accepted and never forwarded.
 */
export const BAD_DAY: ChaosToxics = { rateLimit: 0.05, retryAfterSeconds: 1, unavailable: 0.05, latency: 0.05, latencyMs: 2000, lostAnswer: 0.04, droppedSend: 0.33 };

function launchRequest(webhookUrl: string, i: number): string {
  return JSON.stringify({
    name: 'Flaky Token',
    ticker: 'FLKY',
    totalSupply: String(1_000_000 + i),
    decimals: 6,
    uri: 'https://example.com/flaky.json',
    tokenStandard: 'token-2022',
    creator: Keypair.generate().publicKey.toBase58(),
    revokeMintAuthority: true,
    webhookUrl,
    webhookSecret: 'whsec_bench_0123456789abcdef',
  });
}

/**
 * How long the launches of one side may take before the unfinished ones count as not complete: 4x
 * the max goal (BENCH_FLAKY_DEADLINE_MS sets another, e.g. a short one to see the row fail).
 */
const DEADLINE_MS = Number(process.env.BENCH_FLAKY_DEADLINE_MS ?? 120_000);

/** One side's outcome: each launch's ms from creation to completion, and what kept any from completing exactly. */
interface Outcome {
  samples: number[];
  complete: number;
  problems: string[];
}

/**
 * Posts `count` launches at once and waits until each is complete or failed, or {@link DEADLINE_MS}
 * passed. A launch counts as complete only with its exact supply read from the chain itself (the
 * embedded node, not through the proxy); one that failed, is still running at the deadline or holds
 * another supply counts as never completing (Infinity), so its p50/max and `flaky-complete` fail.
 */
async function latencies(service: Service, node: EmbeddedBackend, key: string, webhookUrl: string, count: number): Promise<Outcome> {
  const ids = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      // A create reads the funding wallet from the chain: a 503 says to retry with the same key, as a client does.
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `flaky-${i}-${randomBytes(4).toString('hex')}` };
      for (let attempt = 1; ; attempt++) {
        const res = await service.app.request('/api/launches', { method: 'POST', headers, body: launchRequest(webhookUrl, i) });
        if (res.status === 202 || res.status === 200) return ((await res.json()) as { launch: { id: string } }).launch.id;
        if (res.status !== 503 || attempt >= 10) throw new Error(`flaky bench: create answered ${res.status} ${await res.text()}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }),
  );
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const rows = await service.db.selectFrom('launches').select(['id', 'status', 'created_at', 'completed_at', 'results', 'error']).where('id', 'in', ids).execute();
    const settled = rows.every((r) => r.status === 'complete' || r.status === 'failed');
    if (!settled && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    const problems: string[] = [];
    const samples: number[] = [];
    for (const r of rows) {
      const problem = r.status === 'complete' ? await supplyProblem(node, r.results, BigInt(1_000_000 + ids.indexOf(r.id)) * 10n ** 6n) : `launch ${r.id} ${r.status}${r.error ? `: ${String(r.error)}` : ''}`;
      if (problem) problems.push(problem);
      samples.push(problem ? Number.POSITIVE_INFINITY : Number(r.completed_at) - Number(r.created_at));
    }
    return { samples, complete: count - problems.length, problems };
  }
}

/** Why a complete launch's mint is not what it should be on chain, or undefined when it holds exactly `expected`. */
async function supplyProblem(node: EmbeddedBackend, results: unknown, expected: bigint): Promise<string | undefined> {
  const mint = new PublicKey((JSON.parse(String(results)) as { mint: string }).mint);
  const info = await node.getAccountInfo(mint);
  if (!info) return `mint ${mint.toBase58()} not on chain`;
  const supply = unpackMint(mint, info, info.owner).supply;
  return supply === expected ? undefined : `mint ${mint.toBase58()} holds ${supply}, not ${expected}`;
}

/**
 * Launch latency on a provider having a bad day: the service in RPC mode, at its default runner
 * concurrency and RPC timeouts, reaches `npm run chain`'s JSON-RPC (an embedded chain served on
 * loopback) only through the chaos proxy of the test suite with {@link BAD_DAY}'s faults. `count`
 * launches posted at once; p50 and max, against the same launches through a proxy without faults.
 */
export async function benchFlaky(count: number): Promise<{ results: BenchResult[]; note: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-flaky-'));
  const nodeDb = openDatabase(join(dir, 'node.sqlite'));
  await migrateToLatest(nodeDb.db);
  const node = await createEmbeddedBackend({ db: nodeDb.db, secretKey: randomBytes(32), clock: systemClock, logger: silentLogger() });
  const server = await startChainRpcServer({ chain: node, host: '127.0.0.1', port: 0, logger: silentLogger() });
  const payer = Keypair.generate();
  const payerPath = join(dir, 'payer.json');
  writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
  await node.airdrop(payer.publicKey, 100n * BigInt(LAMPORTS_PER_SOL));
  const receiver = await startBenchReceiver();
  const measured: Array<{ name: string; outcome: Outcome; faults: string; missing: string[] }> = [];
  try {
    for (const [i, [name, toxics]] of ([['clean', {}], ['bad-day', BAD_DAY]] as const).entries()) {
      const proxy = await startChaosProxy({ target: server.url, seed: 35 + i, toxics: {} });
      const config = benchConfig(join(dir, `service-${i}`), randomBytes(32), { SOLANA_RPC_URL: proxy.url, SOLANA_PAYER_KEYPAIR: payerPath });
      const service = await createService(config, { logger: silentLogger(), clock: systemClock });
      try {
        service.start();
        const key = (await createApiKey(service.db, { owner: 'bench', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
        const funding = await service.app.request('/api/funding', { headers: { authorization: `Bearer ${key}` } });
        const { address } = ((await funding.json()) as { funding: { address: string } }).funding;
        await node.airdrop(new PublicKey(address), 100n * BigInt(LAMPORTS_PER_SOL));
        // One unmeasured launch without faults first: the first launches of a process pay for its JIT
        // warm-up and first program loads, which would otherwise count against the clean side only.
        await latencies(service, node, key, receiver.url, 1);
        const before = proxy.requests.length;
        proxy.setToxics(toxics);
        const outcome = await latencies(service, node, key, receiver.url, count);
        const requests = proxy.requests.slice(before);
        const sends = requests.filter((m) => m === 'sendTransaction').length;
        const faults = Object.entries(proxy.faults).filter(([, n]) => n > 0).map(([kind, n]) => `${kind} ${n}`).join(', ');
        // Every fault kind the side names must really have been injected, or the row measures a milder day.
        const missing = Object.keys(toxics).filter((kind) => kind in proxy.faults && (toxics as Record<string, number>)[kind]! > 0 && proxy.faults[kind as keyof typeof proxy.faults] === 0);
        measured.push({ name, outcome, faults: `${faults || 'none'} of ${requests.length} requests (${sends} sendTransaction)`, missing });
      } finally {
        await service.stop();
        await proxy.close();
      }
    }
  } finally {
    await receiver.close();
    await server.close();
    await node.close();
    await nodeDb.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const [clean, bad] = measured as [(typeof measured)[0], (typeof measured)[0]];
  const p50 = (o: Outcome) => percentile(o.samples, 50);
  const max = (o: Outcome) => Math.max(...o.samples);
  const injected = Object.keys(BAD_DAY).filter((k) => k !== 'retryAfterSeconds' && k !== 'latencyMs').length;
  const results = [
    result('flaky-clean-p50', p50(clean.outcome), 'ms', p50(clean.outcome)),
    result('flaky-clean-max', max(clean.outcome), 'ms', max(clean.outcome)),
    result('flaky-p50', p50(bad.outcome), 'ms', p50(clean.outcome)),
    result('flaky-max', max(bad.outcome), 'ms', max(clean.outcome)),
    // Launches complete with their exact supply on chain, of `count` each side.
    result('flaky-complete', clean.outcome.complete + bad.outcome.complete, 'launches', 2 * count),
    result('flaky-fault-kinds', injected - bad.missing.length, 'kinds', injected),
  ];
  const problems = [...clean.outcome.problems, ...bad.outcome.problems, ...bad.missing.map((kind) => `no ${kind} injected`)];
  const note = `${count} token-2022 launches posted at once (after one unmeasured), default runner concurrency and RPC timeouts, RPC mode through the chaos proxy; faults: ${bad.faults}${problems.length > 0 ? `; NOT COMPLETE: ${problems.slice(0, 5).join('; ')}` : ''}`;
  return { results, note };
}
