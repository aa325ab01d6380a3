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
 * Posts `count` launches at once and resolves with each one's latency, creation to completion (ms),
 * once every one is complete with its exact supply on chain; a failed launch or a wrong supply throws.
 */
async function latencies(service: Service, node: EmbeddedBackend, key: string, webhookUrl: string, count: number): Promise<number[]> {
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
  for (;;) {
    const rows = await service.db.selectFrom('launches').select(['id', 'status', 'created_at', 'completed_at', 'results']).where('id', 'in', ids).execute();
    if (rows.some((r) => r.status === 'failed')) throw new Error('flaky bench: a launch failed');
    if (rows.every((r) => r.status === 'complete')) {
      for (const r of rows) {
        const mint = new PublicKey((JSON.parse(String(r.results)) as { mint: string }).mint);
        const info = await node.getAccountInfo(mint);
        if (!info) throw new Error(`flaky bench: mint ${mint.toBase58()} not on chain`);
        const supply = unpackMint(mint, info, info.owner).supply;
        const expected = BigInt(1_000_000 + ids.indexOf(r.id)) * 10n ** 6n;
        if (supply !== expected) throw new Error(`flaky bench: mint ${mint.toBase58()} holds ${supply}, not ${expected}`);
      }
      return rows.map((r) => Number(r.completed_at) - Number(r.created_at));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
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
  const measured: Array<{ name: string; p50: number; max: number; faults: string }> = [];
  try {
    for (const [i, [name, toxics]] of ([['clean', {}], ['bad-day', BAD_DAY]] as const).entries()) {
      const proxy = await startChaosProxy({ target: server.url, seed: 35 + i, toxics });
      const config = benchConfig(join(dir, `service-${i}`), randomBytes(32), { SOLANA_RPC_URL: proxy.url, SOLANA_PAYER_KEYPAIR: payerPath });
      const service = await createService(config, { logger: silentLogger(), clock: systemClock });
      try {
        service.start();
        const key = (await createApiKey(service.db, { owner: 'bench', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
        const funding = await service.app.request('/api/funding', { headers: { authorization: `Bearer ${key}` } });
        const { address } = ((await funding.json()) as { funding: { address: string } }).funding;
        await node.airdrop(new PublicKey(address), 100n * BigInt(LAMPORTS_PER_SOL));
        const samples = await latencies(service, node, key, receiver.url, count);
        const faults = Object.entries(proxy.faults).filter(([, n]) => n > 0).map(([kind, n]) => `${kind} ${n}`).join(', ');
        measured.push({ name, p50: percentile(samples, 50), max: Math.max(...samples), faults: `${faults || 'none'} of ${proxy.requests.length} requests` });
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
  const results = [
    result('flaky-clean-p50', clean.p50, 'ms', clean.p50),
    result('flaky-clean-max', clean.max, 'ms', clean.max),
    result('flaky-p50', bad.p50, 'ms', clean.p50),
    result('flaky-max', bad.max, 'ms', clean.max),
  ];
  const note = `${count} token-2022 launches posted at once, default runner concurrency and RPC timeouts, RPC mode through the chaos proxy; faults: ${bad.faults}`;
  return { results, note };
}
