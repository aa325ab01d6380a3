import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { migrateToLatest, openDatabase, type OpenedDatabase } from '../../src/db/database.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startRpcDouble, type RpcDouble } from '../chain/support/rpcDouble.js';
import { startChildService, type ChildService } from '../reliability/support/childService.js';
import { startFaultReceiver, type FaultReceiver } from '../reliability/support/faultReceiver.js';
import { serveOnPort } from '../reliability/support/server.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService } from '../support/service.js';
import { runMonitor } from './support.js';

async function until(condition: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A data directory with a migrated database and an API key, for a service process to start on. */
async function prepareDataDir(): Promise<{ dir: string; key: string; env: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), 'launch-monitor-'));
  const opened = openDatabase(join(dir, 'launch-service.sqlite'));
  await migrateToLatest(opened.db);
  const { key } = await createApiKey(opened.db, { owner: 'ops', scopes: ['launches:write', 'launches:read'], now: Date.now() });
  await opened.close();
  return { dir, key, env: { DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' } };
}

// Real processes (service, monitor) are slow to start on a loaded machine: generous bounds.
describe('npm run monitor against a real service process', { timeout: 120_000 }, () => {
  let data: Awaited<ReturnType<typeof prepareDataDir>>;
  let service: ChildService;
  const receivers: FaultReceiver[] = [];

  beforeAll(async () => {
    data = await prepareDataDir();
    service = await startChildService({ ...data.env, WEBHOOK_RETRY_SCHEDULE: '0,20ms,20ms', WEBHOOK_POLL_INTERVAL_MS: '50ms', HEALTH_CACHE_MS: '0' });
  }, 120_000);
  afterAll(async () => {
    service?.child.kill('SIGCONT');
    await service?.kill('SIGKILL');
    for (const r of receivers) await r.close();
    rmSync(data.dir, { recursive: true, force: true });
  });

  const openBreakers = async () => {
    const health = (await (await fetch(`${service.origin}/api/health`)).json()) as { circuitBreakers: Record<string, { state: string }> };
    return Object.values(health.circuitBreakers).filter((b) => b.state === 'open').length;
  };
  /** A launch whose webhooks go to a receiver answering 500: three failures open that host's breaker. */
  async function breakOneHost(): Promise<void> {
    const receiver = await startFaultReceiver();
    receiver.decide = () => '500';
    receivers.push(receiver);
    const before = await openBreakers();
    const res = await fetch(`${service.origin}/api/launches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${data.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(launchBody({ webhookUrl: `${receiver.origin}/hooks` })),
    });
    expect(res.status).toBe(202);
    await until(async () => (await openBreakers()) === before + 1, 'the breaker to open');
  }

  it('healthy → ok, exit 0, one JSON line', async () => {
    const run = await runMonitor(['--url', service.origin, '--preset', 'production', '--once', '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(Object.keys(run.line).sort()).toEqual(['errorRate', 'level', 'openBreakers', 'reasons', 'responseMs', 'status']);
    expect(run.line).toMatchObject({ level: 'ok', status: 'healthy', errorRate: 0, openBreakers: 0, reasons: [] });
    expect(run.line.responseMs).toBeLessThan(2000);
  });

  it('one open breaker → warning (exit 1), three → critical (exit 2)', async () => {
    await breakOneHost();
    const one = await runMonitor(['--url', service.origin, '--preset', 'staging', '--once', '--json']);
    expect(one.code).toBe(1);
    expect(one.line).toMatchObject({ level: 'warning', status: 'healthy', openBreakers: 1 });
    expect(one.line.reasons.join()).toMatch(/open circuit breaker/);

    await breakOneHost();
    await breakOneHost();
    const three = await runMonitor(['--url', service.origin, '--preset', 'staging', '--once', '--json']);
    expect(three.code).toBe(2);
    expect(three.line).toMatchObject({ level: 'critical', openBreakers: 3 });
    const plain = await runMonitor(['--url', service.origin, '--preset', 'staging', '--once']);
    expect(plain.code).toBe(2);
    expect(plain.stdout).toMatch(/CRITICAL status=healthy .*openBreakers=3/);
  });

  it('a frozen service (SIGSTOP) → critical on timeout', async () => {
    service.child.kill('SIGSTOP');
    try {
      const started = Date.now();
      const run = await runMonitor(['--url', service.origin, '--preset', 'production', '--timeout', '1s', '--once', '--json']);
      expect(run.code).toBe(2);
      expect(run.line).toMatchObject({ level: 'critical', status: 'timeout', responseMs: 1000 });
      expect(run.line.reasons.join()).toMatch(/did not answer within 1000 ms/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      service.child.kill('SIGCONT');
    }
  });

  it('refuses an unknown preset with exit 3', async () => {
    const run = await runMonitor(['--url', service.origin, '--preset', 'prod', '--once']);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/unknown preset "prod"/);
  });
});

describe('npm run monitor: degraded cache and error rate', { timeout: 120_000 }, () => {
  it('a service whose cache cannot refresh (its cluster never answers getLatestBlockhash) → warning', async () => {
    const nodeDir = mkdtempSync(join(tmpdir(), 'launch-monitor-node-'));
    let nodeDb: OpenedDatabase | undefined;
    let node: EmbeddedBackend | undefined;
    let double: RpcDouble | undefined;
    let service: ChildService | undefined;
    const data = await prepareDataDir();
    try {
      nodeDb = openDatabase(join(nodeDir, 'node.sqlite'));
      await migrateToLatest(nodeDb.db);
      node = await createEmbeddedBackend({ db: nodeDb.db, secretKey: Buffer.alloc(32, 7), clock: systemClock, logger: silentLogger() });
      const payer = Keypair.generate();
      const payerPath = join(nodeDir, 'payer.json');
      writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
      await node.airdrop(payer.publicKey, 5n * BigInt(LAMPORTS_PER_SOL));
      double = await startRpcDouble(node);
      double.inject('hang', 1000, 'getLatestBlockhash');
      service = await startChildService({ ...data.env, SOLANA_RPC_URL: double.url, SOLANA_PAYER_KEYPAIR: payerPath, HEALTH_CHECK_TIMEOUT_MS: '300ms', HEALTH_CACHE_MS: '0' });
      const run = await runMonitor(['--url', service.origin, '--preset', 'development', '--once', '--json']);
      expect(run.line).toMatchObject({ level: 'warning', status: 'degraded', openBreakers: 0 });
      expect(run.code).toBe(1);
    } finally {
      await service?.kill('SIGKILL');
      await double?.close();
      await node?.close();
      await nodeDb?.close();
      rmSync(nodeDir, { recursive: true, force: true });
      rmSync(data.dir, { recursive: true, force: true });
    }
  });

  it('reports the 5xx share the test caused, read from /metrics', async () => {
    const t = await startTestService();
    t.service.app.get('/api/test-failure', () => {
      throw new Error('boom');
    });
    const http = await serveOnPort(t);
    try {
      // 97 answered requests and 2 failures; the monitor's own health poll makes the 100th.
      for (let i = 0; i < 97; i++) expect((await http.send('GET', '/api/health')).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await http.send('GET', '/api/test-failure')).status).toBe(500);
      const run = await runMonitor(['--url', http.origin, '--preset', 'production', '--once', '--json']);
      expect(run.line.errorRate).toBe(0.02);
      expect(run.line).toMatchObject({ level: 'warning', status: 'healthy' });
      expect(run.line.reasons).toEqual(['error rate 2.00% > 1.00%']);
      expect(run.code).toBe(1);
    } finally {
      await http.close();
      await t.close();
    }
  });
});
