import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { readMintBack } from '../chain/support/readBack.js';
import { startRpcDouble, type RpcDouble } from '../chain/support/rpcDouble.js';
import { launchBody } from '../support/fixtures.js';
import { testConfig } from '../support/config.js';
import { startTestService, type TestService } from '../support/service.js';

// The cluster is a LiteSVM-backed JSON-RPC double on 127.0.0.1 (no real cluster can run here);
// the service talks to it only through web3.js Connection, as it would to any cluster.
describe('the service on the RPC backend', () => {
  let nodeDir: ReturnType<typeof testConfig>;
  let nodeDb: OpenedDatabase;
  let node: EmbeddedBackend;
  let double: RpcDouble;
  let t: TestService;

  beforeAll(async () => {
    nodeDir = testConfig();
    nodeDb = openDatabase(join(nodeDir.dir, 'node.sqlite'));
    await migrateToLatest(nodeDb.db);
    node = await createEmbeddedBackend({ db: nodeDb.db, secretKey: Buffer.alloc(32, 9), clock: systemClock, logger: silentLogger() });
    double = await startRpcDouble(node);
    const payer = Keypair.generate();
    const payerPath = join(nodeDir.dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    await node.airdrop(payer.publicKey, 20n * BigInt(LAMPORTS_PER_SOL));
    t = await startTestService({ env: { SOLANA_RPC_URL: double.url, SOLANA_PAYER_KEYPAIR: payerPath } });
  });
  afterAll(async () => {
    await t?.close();
    await double?.close();
    await node?.close();
    await nodeDb?.close();
    nodeDir?.cleanup();
  });

  it('reports the rpc chain in health and completes a launch through injected 429 and 503 faults, absorbed by the RPC pool without a step retry', async () => {
    expect(t.service.chain.kind).toBe('rpc');
    const health = (await (await t.request('/api/health')).json()) as any;
    expect(health.checks.chain).toMatchObject({ status: 'pass' });
    expect(health.checks.chain.message).toMatch(/^rpc slot/);

    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ totalSupply: '777', decimals: 2 }) });
    expect(res.status).toBe(202);
    const { launch } = (await res.json()) as { launch: { id: string } };
    const sendsBefore = double.requests.filter((m) => m === 'sendTransaction').length;
    double.inject('429', 1, 'sendTransaction');
    double.inject('503', 1, 'getLatestBlockhash');
    for (let pass = 0; pass < 20; pass++) {
      await t.service.runner.drain();
      const row = await t.service.db.selectFrom('launches').select('status').where('id', '=', launch.id).executeTakeFirstOrThrow();
      if (row.status === 'complete' || row.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 600));
    }
    const got = ((await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as any).launch;
    expect(got.error).toBeNull();
    expect(got.status).toBe('complete');
    // The same bytes were sent again and the read asked again inside the pool: no step waited.
    expect(got.steps.every((s: any) => s.attempts === 1)).toBe(true);
    const transactions = got.steps.reduce((n: number, s: any) => n + s.transactions.length, 0);
    expect(double.requests.filter((m) => m === 'sendTransaction').length - sendsBefore).toBe(transactions + 1);
    // Read the mint back from the cluster the service used.
    expect((await readMintBack(node, got.results.mint)).mint.supply).toBe(77_700n);
  }, 60_000);

  it('runs many launches at once against a cluster by default, where a launch waits on the network', async () => {
    const key = await t.key('globex', ['launches:write', 'launches:read']);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await t.createLaunch(key, launchBody({ totalSupply: String(100 + i), decimals: 0 })));
    t.service.runner.start();
    let most = 0;
    for (let i = 0; i < 600; i++) {
      const rows = await t.service.db.selectFrom('launches').select('status').where('id', 'in', ids).execute();
      most = Math.max(most, rows.filter((r) => r.status === 'processing').length);
      if (rows.every((r) => r.status === 'complete')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    // Two at a time before (the embedded chain's default), and one at a time while the event loop ran late.
    expect(most).toBeGreaterThanOrEqual(6);
    const rows = await t.service.db.selectFrom('launches').select('status').where('id', 'in', ids).execute();
    expect(rows.map((r) => r.status)).toEqual(ids.map(() => 'complete'));
  }, 60_000);
});
