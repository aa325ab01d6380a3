import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openPostgres } from '../../src/db/database.js';
import { measureDispatcher } from './dispatch.js';
import { insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { startBenchReceiver } from './receiver.js';
import { result, type BenchResult } from './types.js';

/** The PostgreSQL server the `postgres` scenario runs on (a database is created and dropped there). */
export const benchDatabaseUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || undefined;

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: benchDatabaseUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

async function startChild(env: Record<string, string>): Promise<{ child: ChildProcess; go(): void; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'dispatchChild.ts')], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', () => resolve());
    void exited.then(() => reject(new Error(`dispatch child exited: ${stderr.slice(-1000)}`)));
  });
  return {
    child,
    go: () => child.stdin?.write('go\n'),
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Deliveries/s of `instances` dispatcher processes draining one pre-filled outbox on PostgreSQL
 * (each its own process, pool and lease owner, as separate machines would be), for at most `maxMs`.
 */
export async function measurePostgresDispatch(instances: number, count: number, maxMs: number): Promise<{ perSecond: number; delivered: number }> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  await admin(`create database ${name}`);
  const url = new URL(benchDatabaseUrl!);
  url.pathname = `/${name}`;
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  const { db, close } = openPostgres(url.toString(), { poolSize: 4 });
  const receiver = await startBenchReceiver();
  const children: Array<Awaited<ReturnType<typeof startChild>>> = [];
  try {
    await migrateToLatest(db);
    const secretKey = randomBytes(32);
    const launchId = await insertBenchLaunch(db, createSecretBox(secretKey), receiver.url);
    await prefillOutbox(db, launchId, receiver.url, count);
    for (let i = 0; i < instances; i++) children.push(await startChild({ BENCH_DATABASE_URL: url.toString(), BENCH_SECRET_KEY: secretKey.toString('base64'), DATA_DIR: join(dir, `i${i}`) }));
    const started = performance.now();
    for (const c of children) c.go();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([receiver.waitFor(count), new Promise((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
    await Promise.all(children.map((c) => c.stop()));
    const seconds = (performance.now() - started) / 1000;
    const delivered = Number((await db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n);
    if (delivered === 0) throw new Error('postgres dispatch bench: nothing delivered');
    return { perSecond: delivered / seconds, delivered };
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
    await receiver.close();
    await close();
    await admin(`drop database if exists ${name} with (force)`);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `postgres`: the dispatcher on PostgreSQL with one and two instances (processes), each beside the
 * SQLite dispatcher measured in the same run (the baseline). Skipped, with a line, without a server.
 */
export async function benchPostgres(count = 3000, maxMs = 10_000): Promise<{ results: BenchResult[]; note: string }> {
  if (!benchDatabaseUrl) return { results: [], note: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL server' };
  const sqlite = await measureDispatcher(count, maxMs);
  const one = await measurePostgresDispatch(1, count, maxMs);
  const two = await measurePostgresDispatch(2, count, maxMs);
  return {
    results: [result('dispatch-pg-1', one.perSecond, 'deliveries/s', sqlite.perSecond), result('dispatch-pg-2', two.perSecond, 'deliveries/s', sqlite.perSecond)],
    note: `backlog ${count} events to one host; baseline: the SQLite dispatcher in one process (${Math.round(sqlite.perSecond)}/s); 1 instance ${one.delivered}, 2 instances ${two.delivered} delivered`,
  };
}
