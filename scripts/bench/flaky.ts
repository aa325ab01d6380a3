import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createService, type Service } from '../../src/app/service.js';
import { createEmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { startChainRpcServer } from '../../src/chain/embedded/rpcServer.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startChaosProxy } from '../../test/support/chaosProxy.js';
import { benchConfig } from './config.js';
import { startBenchReceiver } from './receiver.js';
import { percentile, result, type BenchResult } from './types.js';

/** Shares of `sendTransaction` calls accepted by the proxy and never forwarded (a leader dropped them). */
const DROP_RATES = [0, 0.1, 0.3];

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

/** Launches at once: the runner's concurrency, so a launch's latency is its own work and waits, not a queue. */
const WAVE = 4;

/** Launches `count` in waves of {@link WAVE} and resolves with each one's latency, creation to completion (ms). */
async function latencies(service: Service, key: string, webhookUrl: string, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let done = 0; done < count; done += WAVE) {
    const ids = await Promise.all(
      Array.from({ length: Math.min(WAVE, count - done) }, async (_, i) => {
        const res = await service.app.request('/api/launches', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: launchRequest(webhookUrl, done + i) });
        if (res.status !== 202) throw new Error(`flaky bench: create answered ${res.status} ${await res.text()}`);
        return ((await res.json()) as { launch: { id: string } }).launch.id;
      }),
    );
    for (;;) {
      const rows = await service.db.selectFrom('launches').select(['status', 'created_at', 'completed_at']).where('id', 'in', ids).execute();
      if (rows.some((r) => r.status === 'failed')) throw new Error('flaky bench: a launch failed');
      if (rows.every((r) => r.status === 'complete')) {
        samples.push(...rows.map((r) => Number(r.completed_at) - Number(r.created_at)));
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return samples;
}

/**
 * Launch latency on a network that drops sends: the service in RPC mode reaches `npm run chain`'s
 * JSON-RPC (an embedded chain served on loopback) only through the chaos proxy of the test suite,
 * which accepts a share of `sendTransaction` calls and never forwards them. The service resends the
 * same signed bytes every ~2 s while it confirms (docs/chain.md), so a drop should cost about that,
 * not a blockhash lifetime. p50 and p99 at each drop rate, against the same at 0 % as baseline.
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
  const measured: Array<{ rate: number; p50: number; p99: number; drops: number }> = [];
  try {
    for (const [i, rate] of DROP_RATES.entries()) {
      const proxy = await startChaosProxy({ target: server.url, seed: 35 + i, toxics: { droppedSend: rate } });
      const config = benchConfig(join(dir, `service-${i}`), randomBytes(32), { SOLANA_RPC_URL: proxy.url, SOLANA_PAYER_KEYPAIR: payerPath, SOLANA_RPC_TIMEOUT: '1s', RUNNER_CONCURRENCY: String(WAVE) });
      const service = await createService(config, { logger: silentLogger(), clock: systemClock });
      try {
        service.start();
        const key = (await createApiKey(service.db, { owner: 'bench', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
        const funding = await service.app.request('/api/funding', { headers: { authorization: `Bearer ${key}` } });
        const { address } = ((await funding.json()) as { funding: { address: string } }).funding;
        await node.airdrop(new PublicKey(address), 100n * BigInt(LAMPORTS_PER_SOL));
        const samples = await latencies(service, key, receiver.url, count);
        measured.push({ rate, p50: percentile(samples, 50), p99: percentile(samples, 99), drops: proxy.faults.droppedSend });
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
  const clean = measured[0]!;
  const results = measured.flatMap((m) => {
    const pct = Math.round(m.rate * 100);
    return [result(`flaky-${pct}-p50`, m.p50, 'ms', clean.p50), result(`flaky-${pct}-p99`, m.p99, 'ms', clean.p99)];
  });
  const note = `${count} token-2022 launches per rate, ${WAVE} at a time, RPC mode through the chaos proxy; sends dropped: ${measured.map((m) => `${Math.round(m.rate * 100)} % → ${m.drops}`).join(', ')}`;
  return { results, note };
}
