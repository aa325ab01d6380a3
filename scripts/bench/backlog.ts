import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { saveBreakerState } from '../../src/webhooks/sql/breakers.js';
import { endpointHost, endpointKey } from '../../src/webhooks/endpointKey.js';
import { spawnBenchChild } from './child.js';
import { SERVICE_NODE_FLAGS } from '../serviceNodeFlags.js';
import { createBenchDb, insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { result, type BenchResult } from './types.js';

const DEAD_URL = 'http://127.0.0.1:9/hook';

/** Prepares a DATA_DIR whose outbox holds `pending` deliveries to a host whose breaker was just opened. */
async function prepare(pending: number): Promise<{ dir: string; secretKey: Buffer }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-backlog-'));
  const bdb = await createBenchDb(join(dir, 'launch-service.sqlite'));
  const now = Date.now();
  if (pending > 0) {
    const launchId = await insertBenchLaunch(bdb.db, bdb.box, DEAD_URL);
    await prefillOutbox(bdb.db, launchId, DEAD_URL, pending, now);
  }
  await saveBreakerState(bdb.db, endpointKey(DEAD_URL), endpointHost(DEAD_URL), { state: 'open', failures: 3, openedAt: now }, now);
  await bdb.close();
  return { dir, secretKey: bdb.secretKey };
}

async function peakRss(pending: number, runMs: number): Promise<number> {
  const { dir, secretKey } = await prepare(pending);
  try {
    const child = await spawnBenchChild<{ ready: boolean }>('backlogChild.ts', [], { DATA_DIR: dir, BENCH_SECRET_KEY: secretKey.toString('base64'), BENCH_RUN_MS: String(runMs) }, [...SERVICE_NODE_FLAGS]);
    const code = await child.exited;
    const last = child.lines.at(-1) as { maxRssBytes?: number } | undefined;
    if (code !== 0 || !last?.maxRssBytes) throw new Error(`backlog child exited ${code} without a measurement`);
    return last.maxRssBytes / (1024 * 1024);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `backlog-memory`: peak RSS of the service with 100 000 pending deliveries behind an open breaker vs an empty outbox. */
export async function benchBacklog(pending = 100_000, runMs = 5000): Promise<{ result: BenchResult; note: string }> {
  const full = await peakRss(pending, runMs);
  const empty = await peakRss(0, runMs);
  return { result: result('backlog-memory', full, 'MB', empty), note: `whole service in a child process, ${runMs / 1000} s with a 50 ms poll; baseline = same service, empty outbox` };
}
