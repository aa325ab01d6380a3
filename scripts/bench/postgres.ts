import { spawn, type ChildProcess } from 'node:child_process';
import { SERVICE_NODE_FLAGS } from '../serviceNodeFlags.js';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Connection, Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { request } from 'undici';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, openPostgres } from '../../src/db/database.js';
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
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', join(import.meta.dirname, 'dispatchChild.ts')], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
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

/** A child process that prints one line matching `ready` once serving; `stop()` SIGTERMs it. */
async function spawnReady(script: string, env: Record<string, string>, ready: RegExp): Promise<{ line: RegExpExecArray; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const line = await new Promise<RegExpExecArray>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = ready.exec(l);
      if (m) resolve(m);
    });
    void exited.then(() => reject(new Error(`${script} exited: ${stderr.slice(-1000)}`)));
  });
  return {
    line,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Launches/s of `instances` service processes sharing one chain (`npm run chain`, its own process)
 * and one database: PostgreSQL when `postgres`, else a SQLite file (one instance only).
 * `count` token-2022 launches posted round-robin, webhooks to a local receiver, until every launch is complete.
 */
export async function measureSharedChainPipeline(options: { instances: number; count: number; postgres: boolean }): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pipe-'));
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const children: Array<{ stop(): Promise<void> }> = [];
  const receiver = await startBenchReceiver();
  let dbUrl: string | undefined;
  try {
    const chain = await spawnReady(join(import.meta.dirname, '..', 'chain.ts'), { DATA_DIR: join(dir, 'chain'), CHAIN_RPC_PORT: '0', LOG_LEVEL: 'warn', NODE_ENV: 'development' }, /^chain rpc (\S+)$/);
    children.push(chain);
    const rpcUrl = chain.line[1]!;
    const payer = Keypair.generate();
    const payerPath = join(dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    await new Connection(rpcUrl, 'confirmed').requestAirdrop(payer.publicKey, 1000 * LAMPORTS_PER_SOL);
    const secretKey = randomBytes(32);
    const env: Record<string, string> = { SOLANA_RPC_URL: rpcUrl, SOLANA_PAYER_KEYPAIR: payerPath };
    if (options.postgres) {
      await admin(`create database ${name}`);
      const url = new URL(benchDatabaseUrl!);
      url.pathname = `/${name}`;
      dbUrl = url.toString();
      env.DATABASE_URL = dbUrl;
    }
    mkdirSync(join(dir, 'i0'), { recursive: true });
    // The service's SQLite file in the first instance's DATA_DIR, or the PostgreSQL database.
    const { db, close } = options.postgres ? openPostgres(dbUrl!, { poolSize: 2 }) : openDatabase(join(dir, 'i0', 'launch-service.sqlite'));
    let key: string;
    try {
      await migrateToLatest(db);
      key = (await createApiKey(db, { owner: 'bench', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    } finally {
      await close();
    }
    const origins: string[] = [];
    for (let i = 0; i < options.instances; i++) {
      const svc = await spawnReady(join(import.meta.dirname, 'instanceServer.ts'), { BENCH_DIR: join(dir, `i${i}`), BENCH_SECRET_KEY: secretKey.toString('base64'), BENCH_ENV: JSON.stringify(env) }, /"port":(\d+)/);
      children.push(svc);
      origins.push(`http://127.0.0.1:${svc.line[1]}`);
    }
    const started = performance.now();
    const ids = await Promise.all(
      Array.from({ length: options.count }, async (_, n) => {
        const res = await request(`${origins[n % origins.length]}/api/launches`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Bench Token', ticker: 'BNCH', totalSupply: '1000000000', decimals: 6, uri: 'https://example.com/bench.json', tokenStandard: 'token-2022', creator: Keypair.generate().publicKey.toBase58(), allocations: { creator: 100 }, webhookUrl: receiver.url, webhookSecret: 'whsec_bench_0123456789abcdef' }),
        });
        const body = (await res.body.json()) as { launch?: { id: string } };
        if (res.statusCode !== 202 || !body.launch) throw new Error(`pipeline: create answered ${res.statusCode}`);
        return body.launch.id;
      }),
    );
    // Completion as the API reports it, polled through the first instance.
    for (const id of ids) {
      for (;;) {
        const res = await request(`${origins[0]}/api/launches/${id}`, { headers: { authorization: `Bearer ${key}` } });
        const status = ((await res.body.json()) as { launch: { status: string } }).launch.status;
        if (status === 'complete') break;
        if (status === 'failed') throw new Error(`pipeline: launch ${id} failed`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    return options.count / ((performance.now() - started) / 1000);
  } finally {
    for (const c of children.reverse()) await c.stop().catch(() => undefined);
    await receiver.close();
    if (dbUrl) await admin(`drop database if exists ${name} with (force)`);
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
  const launches = 60;
  const pipeSqlite = await measureSharedChainPipeline({ instances: 1, count: launches, postgres: false });
  const pipe1 = await measureSharedChainPipeline({ instances: 1, count: launches, postgres: true });
  const pipe2 = await measureSharedChainPipeline({ instances: 2, count: launches, postgres: true });
  return {
    results: [
      result('dispatch-pg-1', one.perSecond, 'deliveries/s', sqlite.perSecond),
      result('dispatch-pg-2', two.perSecond, 'deliveries/s', sqlite.perSecond),
      result('pipeline-pg-1', pipe1, 'launches/s', pipeSqlite),
      result('pipeline-pg-2', pipe2, 'launches/s', pipeSqlite),
    ],
    note: `dispatch: backlog ${count} events to one host, baseline the SQLite dispatcher in one process; pipeline: ${launches} launches through service processes on one npm run chain (RPC), baseline one SQLite service on the same kind of chain`,
  };
}
