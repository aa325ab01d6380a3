import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Keypair } from '@solana/web3.js';
import { Pool } from 'undici';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { spawnBenchChild } from './child.js';
import { SERVICE_NODE_FLAGS } from '../serviceNodeFlags.js';
import { percentile, result, type BenchResult } from './types.js';

const PARALLEL = 50;

/**
 * Polls GET /api/health every 100 ms on a new connection each time, not waiting for answers.
 * Refused connections are not samples.
 */
function probeHealth(origin: string): { stop(): number[] } {
  const samples: number[] = [];
  const waiting = new Set<number>();
  const probe = () => {
    const started = performance.now();
    waiting.add(started);
    get(`${origin}/api/health`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => {
        waiting.delete(started);
        samples.push(performance.now() - started);
      });
    }).on('error', () => waiting.delete(started));
  };
  const timer = setInterval(probe, 100);
  probe();
  return {
    stop() {
      clearInterval(timer);
      const now = performance.now();
      return [...samples, ...[...waiting].map((s) => now - s)]; // unanswered probes count as long as they waited
    },
  };
}

/**
 * From before a service's spawn: every 10 ms a new connection to `port` sends GET /api/health.
 * Resolves with when the port first accepted a connection (the kernel completes the handshake once
 * the process listens, whether or not its event loop is free) and when the first answer arrived.
 */
function probeStartup(port: number): Promise<{ acceptedAt: number; answeredAt: number }> {
  return new Promise((resolve) => {
    let acceptedAt: number | undefined;
    const timer = setInterval(() => {
      const req = get({ host: '127.0.0.1', port, path: '/api/health', agent: false }, (res) => {
        res.resume();
        res.on('end', () => {
          clearInterval(timer);
          resolve({ acceptedAt: acceptedAt ?? performance.now(), answeredAt: performance.now() });
        });
      });
      req.on('socket', (socket) => socket.once('connect', () => (acceptedAt ??= performance.now())));
      req.on('error', () => undefined);
    }, 10);
  });
}

/** A free port on 127.0.0.1 (bound and released; the restarted service binds it next). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function launchBody(webhookUrl: string) {
  return { name: 'Burst Token', ticker: 'BRST', totalSupply: '1000000000', decimals: 6, uri: 'https://example.com/b.json', tokenStandard: 'token-2022', creator: Keypair.generate().publicKey.toBase58(), allocations: { creator: 100 }, webhookUrl, webhookSecret: 'whsec_bench_0123456789abcdef' };
}

/** Posts `count` launches `PARALLEL` at a time. */
async function postLaunches(pool: Pool, key: string, webhookUrl: string, count: number, service: { stderr(): string }): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < count) {
        next += 1;
        const res = await pool.request({ path: '/api/launches', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(launchBody(webhookUrl)) });
        const text = await res.body.text();
        if (res.statusCode === 202) continue;
        await new Promise((r) => setTimeout(r, 500)); // the service's error line arrives over its stderr pipe
        throw new Error(`burst bench: create answered ${res.statusCode}: ${text.slice(0, 500)}; the service's errors: ${service.stderr()}`);
      }
    }),
  );
}

/** Waits until every launch is complete and every delivery delivered. */
async function drained(db: Db): Promise<void> {
  for (;;) {
    const open = await db.selectFrom('launches').select('id').where('status', '!=', 'complete').limit(1).execute();
    const pending = await db.selectFrom('deliveries').select('id').where('status', '=', 'pending').limit(1).execute();
    if (open.length === 0 && pending.length === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * `burst`: `count` token-2022 launches posted `PARALLEL` at a time to the service in its own process,
 * webhooks to a receiver in its own; launches/s until every launch is complete and every delivery
 * delivered, health p50/p99 during it (baseline: the same probe against the idle service just
 * before), breaker openings and failed attempts (both should be 0).
 */
export async function benchBurst(count = 2000): Promise<{ results: BenchResult[]; note: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-burst-'));
  const secretKey = randomBytes(32);
  // The bench only watches this file while the service writes it: no checkpointer of its own, whose
  // WAL restart (not paused with the service's writes) would hold the service's writers waiting.
  const opened = openDatabase(join(dir, 'launch-service.sqlite'), { backgroundCheckpoint: false, autoCheckpoint: false });
  await migrateToLatest(opened.db);
  const key = (await createApiKey(opened.db, { owner: 'bench', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
  const receiver = await spawnBenchChild<{ url: string }>('receiverChild.ts');
  const serviceEnv = { BENCH_DIR: dir, BENCH_SECRET_KEY: secretKey.toString('base64') };
  let service = await spawnBenchChild<{ port: number }>('burstServer.ts', [], serviceEnv, [...SERVICE_NODE_FLAGS]);
  let origin = `http://127.0.0.1:${service.first.port}`;
  let pool = new Pool(origin, { connections: PARALLEL });
  try {
    const idleProbe = probeHealth(origin);
    await new Promise((r) => setTimeout(r, 2000));
    const idle = idleProbe.stop();

    // 1. The burst: launches/s until everything is complete and delivered, health meanwhile.
    const probe = probeHealth(origin);
    const started = performance.now();
    await postLaunches(pool, key, receiver.first.url, count, service);
    await drained(opened.db);
    const seconds = (performance.now() - started) / 1000;
    const during = probe.stop();

    // 2. A backlog and a SIGKILL: half as many launches accepted, the service killed at once, restarted
    //    on the same data (its clock past the dead process's leases); health from the port opening on.
    const backlog = Math.round(count / 2);
    await postLaunches(pool, key, receiver.first.url, backlog, service);
    await pool.close();
    service.child.kill('SIGKILL');
    await service.exited;
    const port = await freePort();
    const spawnedAt = performance.now();
    const startup = probeStartup(port);
    service = await spawnBenchChild<{ port: number }>('burstServer.ts', [], { ...serviceEnv, BENCH_PORT: String(port), BENCH_CLOCK_OFFSET_MS: String(10 * 60_000) }, [...SERVICE_NODE_FLAGS]);
    const { acceptedAt: portOpenAt, answeredAt } = await startup;
    const firstAnswer = answeredAt - portOpenAt;
    origin = `http://127.0.0.1:${service.first.port}`;
    pool = new Pool(origin, { connections: PARALLEL });
    const restartProbe = probeHealth(origin);
    await drained(opened.db);
    const drainSeconds = (performance.now() - portOpenAt) / 1000;
    const draining = restartProbe.stop();

    const breakers = await opened.db.selectFrom('endpoint_breakers').select(['state', 'failures', 'opened_at']).execute();
    const openings = breakers.filter((b) => b.state !== 'closed' || b.opened_at !== null).length;
    const failed = await opened.db.selectFrom('delivery_attempts').select('id').where('outcome', '=', 'failure').execute();
    return {
      results: [
        result('burst', count / seconds, 'launches/s', 0),
        result('burst-health-p50', percentile(during, 50), 'ms', percentile(idle, 50)),
        result('burst-health-p99', percentile(during, 99), 'ms', percentile(idle, 99)),
        result('burst-breaker-openings', openings, 'breakers', 0),
        result('burst-failed-attempts', failed.length, 'attempts', 0),
        result('burst-restart-startup', portOpenAt - spawnedAt, 'ms', 0),
        result('burst-restart-first-health', firstAnswer, 'ms', 0),
        result('burst-restart-health-p99', percentile(draining, 99), 'ms', percentile(idle, 99)),
      ],
      note:
        `${count} token-2022 launches, ${PARALLEL} posting in parallel, ${Math.round(seconds)} s to complete and deliver all; health probed every 100 ms from the bench process (${during.length} probes); ` +
        `then ${backlog} more accepted, SIGKILL, restart: ${Math.round(drainSeconds)} s from the port opening to the backlog drained (${draining.length} probes)`,
    };
  } finally {
    await pool.close().catch(() => undefined);
    await service.stop();
    receiver.child.stdin?.write('dump\n');
    await receiver.exited;
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
