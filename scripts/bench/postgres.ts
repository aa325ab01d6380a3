import { spawn, type ChildProcess } from 'node:child_process';
import { SERVICE_NODE_FLAGS } from '../serviceNodeFlags.js';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { Logger, runMigrations } from 'graphile-worker';
import pg from 'pg';
import { Connection, Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { request } from 'undici';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, openPostgres } from '../../src/db/database.js';
import { measureDispatcher } from './dispatch.js';
import { BENCH_SECRET, insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { databaseCpuMeter, processCpuMs } from './procCpu.js';
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

async function startChild(env: Record<string, string>, script = 'dispatchChild.ts'): Promise<{ child: ChildProcess; go(): void; stop(): Promise<void> }> {
  // BENCH_CPU_PROF_DIR: each child writes a V8 CPU profile there (`node --cpu-prof`) when it exits.
  const prof = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [];
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...prof, '--import', 'tsx', join(import.meta.dirname, script)], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
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

/** Deliveries/s and CPU per delivery of one drain measured on PostgreSQL. */
export interface PostgresDrain {
  perSecond: number;
  delivered: number;
  /** CPU ms per delivery of the worker processes (ours or the peer's), and of the bench database's backends (undefined where /proc cannot tell). */
  serviceCpuMs: number;
  databaseCpuMs: number | undefined;
  /** Each worker process's share of `serviceCpuMs` (CPU ms per delivery of the whole drain), in start order. */
  instanceCpuMs: number[];
}

/** A drain's rate and its CPU per delivery received. */
function perDelivery(delivered: number, run: Awaited<ReturnType<typeof drainWith>>): PostgresDrain {
  const per = (ms: number) => ms / Math.max(1, run.received);
  return { perSecond: delivered / run.seconds, delivered, serviceCpuMs: per(run.serviceCpuMs), databaseCpuMs: run.databaseCpuMs === undefined ? undefined : per(run.databaseCpuMs), instanceCpuMs: run.instanceCpuMs.map(per) };
}

/** A fresh database on the bench's server, its URL, and its removal. */
export async function freshDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  await admin(`create database ${name}`);
  const url = new URL(benchDatabaseUrl!);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/**
 * Starts the children at once, waits until the receiver has `count` requests (or `maxMs`), reads
 * the CPU the children and the backends of `database` (that database's only: not the shared
 * server's other databases or its own processes) used meanwhile, before the children stop, then
 * stops them; elapsed seconds include the stop (what is in flight settles).
 */
async function drainWith(children: Array<Awaited<ReturnType<typeof startChild>>>, receiver: { count: number; waitFor(n: number): Promise<void> }, count: number, maxMs: number, database: string): Promise<{ seconds: number; serviceCpuMs: number; databaseCpuMs: number | undefined; received: number; instanceCpuMs: number[] }> {
  const dbCpu = await databaseCpuMeter(benchDatabaseUrl!, database);
  const childCpu = () => children.map((c) => processCpuMs(c.child.pid ?? -1) ?? 0);
  await dbCpu.start();
  const svc0 = childCpu();
  const started = performance.now();
  for (const c of children) c.go();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([receiver.waitFor(count), new Promise((resolve) => (timer = setTimeout(resolve, maxMs)))]);
  clearTimeout(timer);
  const instanceCpuMs = childCpu().map((cpu, i) => cpu - (svc0[i] ?? 0));
  const databaseCpuMs = await dbCpu.stop();
  const received = receiver.count;
  await Promise.all(children.map((c) => c.stop()));
  const seconds = (performance.now() - started) / 1000;
  return { seconds, serviceCpuMs: instanceCpuMs.reduce((a, b) => a + b, 0), databaseCpuMs, received, instanceCpuMs };
}

/**
 * Deliveries/s of `instances` dispatcher processes draining one pre-filled outbox on PostgreSQL
 * (each its own process, pool and lease owner, as separate machines would be), for at most `maxMs`;
 * `inspect` reads the drained database before it is dropped (scripts/bench/pgStatements.ts).
 */
export async function measurePostgresDispatch(instances: number, count: number, maxMs: number, inspect?: (databaseUrl: string) => Promise<void>): Promise<PostgresDrain> {
  const database = await freshDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  const { db, close } = openPostgres(database.url, { poolSize: 4 });
  const receiver = await startBenchReceiver();
  const children: Array<Awaited<ReturnType<typeof startChild>>> = [];
  try {
    await migrateToLatest(db);
    const secretKey = randomBytes(32);
    const launchId = await insertBenchLaunch(db, createSecretBox(secretKey), receiver.url);
    await prefillOutbox(db, launchId, receiver.url, count);
    for (let i = 0; i < instances; i++) children.push(await startChild({ BENCH_DATABASE_URL: database.url, BENCH_SECRET_KEY: secretKey.toString('base64'), DATA_DIR: join(dir, `i${i}`) }));
    const run = await drainWith(children, receiver, count, maxMs, database.name);
    const delivered = Number((await db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'delivered').executeTakeFirstOrThrow()).n);
    const logged = Number((await db.selectFrom('delivery_attempts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    if (delivered === 0 || logged < delivered) throw new Error(`postgres dispatch bench: ${delivered} delivered, ${logged} attempts logged`);
    await inspect?.(database.url);
    return perDelivery(delivered, run);
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
    await receiver.close();
    await close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The peer: graphile-worker (its own process, `concurrency` jobs at a time) on a fresh database of
 * the same server, `count` jobs queued before the clock starts, each doing the dispatcher's
 * per-delivery work (scripts/bench/peerChild.ts) against the same kind of receiver; `tuned` runs it
 * as its performance page recommends (local queue, batched completion), else on its defaults;
 * `inspect` as for {@link measurePostgresDispatch}.
 */
export async function measurePeer(concurrency: number, count: number, maxMs: number, tuned = true, inspect?: (databaseUrl: string) => Promise<void>): Promise<PostgresDrain> {
  const database = await freshDatabase();
  const receiver = await startBenchReceiver();
  const children: Array<Awaited<ReturnType<typeof startChild>>> = [];
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await runMigrations({ connectionString: database.url, logger: new Logger(() => () => undefined) });
    await client.query('create table peer_attempts (id text primary key, job_id text not null, event_id text not null, attempt integer not null, outcome text not null, status_code integer, duration_ms integer not null, started_at bigint not null)');
    const secretKey = randomBytes(32);
    const sealed = createSecretBox(secretKey).seal(BENCH_SECRET);
    await client.query(
      `select graphile_worker.add_job('deliver', json_build_object('id', 'evt_' || i, 'event', 'launch.step_complete', 'timestamp', now()::text, 'launchId', 'lch_bench', 'sequence', i,
         'data', '{"step":"create_mint","index":0,"total":3,"transactions":[]}'::json, 'url', $1::text, 'sealedSecret', $2::text), max_attempts := 25)
       from generate_series(1, $3::int) i`,
      [receiver.url, sealed, count],
    );
    children.push(await startChild({ BENCH_DATABASE_URL: database.url, BENCH_SECRET_KEY: secretKey.toString('base64'), PEER_CONCURRENCY: String(concurrency), PEER_TUNED: tuned ? '1' : '0' }, 'peerChild.ts'));
    const run = await drainWith(children, receiver, count, maxMs, database.name);
    const delivered = Number((await client.query<{ n: string }>("select count(distinct event_id) as n from peer_attempts where outcome = 'success'")).rows[0]?.n ?? 0);
    if (delivered === 0) throw new Error('peer bench: nothing delivered');
    await inspect?.(database.url);
    return perDelivery(delivered, run);
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
    await client.end();
    await receiver.close();
    await database.drop();
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
    const chain = await spawnReady(join(import.meta.dirname, '..', 'chain.ts'), { DATA_DIR: join(dir, 'chain'), CHAIN_RPC_PORT: '0', LOG_LEVEL: 'warn', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off' }, /^chain rpc (\S+)$/);
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

const ms = (n: number | undefined) => (n === undefined ? '?' : n.toFixed(2));
const cpuNote = (d: PostgresDrain) => `${ms(d.serviceCpuMs)} + ${ms(d.databaseCpuMs)} ms`;
const runsNote = (runs: PostgresDrain[]) => runs.map((d) => `${Math.round(d.perSecond)}/s (${cpuNote(d)})`).join(', ');

/**
 * `postgres`: the dispatcher on PostgreSQL with one and two instances (processes) beside the peer,
 * graphile-worker on the same server doing the same per-delivery work in its fastest documented
 * configuration (local queue of concurrency + 1, completions batched with delay 0) at its best of
 * {@link PEER_CONCURRENCIES}, its default configuration reported beside it, and beside the SQLite
 * dispatcher, all in the same run, each the best of {@link ROUNDS} interleaved runs; with CPU per
 * delivery (the workers' processes + the bench database's backends). Skipped, with a line, without a server.
 */
export async function benchPostgres(count = 3000, maxMs = 10_000): Promise<{ results: BenchResult[]; note: string }> {
  if (!benchDatabaseUrl) return { results: [], note: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL server' };
  // Every configuration runs ROUNDS times, interleaved (a drift of the machine's speed falls on all
  // of them alike), and its best run counts: the peer's best concurrency is itself the best of runs.
  const best = <T extends { perSecond: number }>(runs: T[]): T => runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
  const sqliteRuns: Array<{ perSecond: number }> = [];
  const peerRuns = new Map<number, Array<PostgresDrain & { concurrency: number }>>(PEER_CONCURRENCIES.map((c) => [c, []]));
  const defaultPeerRuns = new Map<number, Array<PostgresDrain & { concurrency: number }>>(PEER_CONCURRENCIES.map((c) => [c, []]));
  const oneRuns: PostgresDrain[] = [];
  const twoRuns: PostgresDrain[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    sqliteRuns.push(await measureDispatcher(count, maxMs));
    for (const concurrency of PEER_CONCURRENCIES) {
      peerRuns.get(concurrency)!.push({ ...(await measurePeer(concurrency, count, maxMs, true)), concurrency });
      defaultPeerRuns.get(concurrency)!.push({ ...(await measurePeer(concurrency, count, maxMs, false)), concurrency });
    }
    // One and two instances back to back, the first alternating by round (a drift of the machine's speed favours neither).
    for (const instances of round % 2 === 0 ? [1, 2] : [2, 1]) (instances === 1 ? oneRuns : twoRuns).push(await measurePostgresDispatch(instances, count, maxMs));
  }
  const sqlite = best(sqliteRuns);
  const peers = PEER_CONCURRENCIES.map((c) => best(peerRuns.get(c)!));
  const defaultPeers = PEER_CONCURRENCIES.map((c) => best(defaultPeerRuns.get(c)!));
  const one = best(oneRuns);
  const two = best(twoRuns);
  // The baseline is the peer at its best: the fastest of its tuned and default runs (on a quiet machine the tuned).
  const peer = best([...peers, ...defaultPeers]);
  const cpu = (d: PostgresDrain) => d.serviceCpuMs + (d.databaseCpuMs ?? 0);
  return {
    results: [
      result('dispatch-pg-peer', peer.perSecond, 'deliveries/s', 0),
      result('dispatch-pg-peer-default', best(defaultPeers).perSecond, 'deliveries/s', best(peers).perSecond),
      result('dispatch-pg-1', one.perSecond, 'deliveries/s', peer.perSecond),
      result('dispatch-pg-2', two.perSecond, 'deliveries/s', peer.perSecond),
      result('dispatch-pg-1-sqlite', one.perSecond, 'deliveries/s', sqlite.perSecond),
      result('dispatch-pg-2-vs-1', two.perSecond, 'deliveries/s', one.perSecond),
      result('dispatch-pg-1-cpu', cpu(one), 'ms/delivery', cpu(peer)),
      result('dispatch-pg-2-cpu', cpu(two), 'ms/delivery', cpu(peer)),
    ],
    note:
      `backlog ${count} events to one host, every attempt logged, each configuration the best of ${ROUNDS} interleaved runs; baseline of -1/-2 and -cpu: graphile-worker on the same server at its best run of every configuration; tuned (local queue c + 1, completeJobBatchDelay 0) at concurrency ${peers.map((p) => `${p.concurrency}: ${Math.round(p.perSecond)}/s (${cpuNote(p)})`).join(', ')}; ` +
      `-peer-default: on its defaults, ${defaultPeers.map((p) => `${p.concurrency}: ${Math.round(p.perSecond)}/s (${cpuNote(p)})`).join(', ')}; ` +
      `CPU per delivery (service + database; the database's is its own backends' from /proc, pids from pg_stat_activity every 100 ms, not the server's other databases or shared processes): ours 1 instance ${cpuNote(one)}, 2 instances ${cpuNote(two)} (per instance ${two.instanceCpuMs.map(ms).join(' + ')}); ` +
      `every run, in round order: 1 instance ${runsNote(oneRuns)}, 2 instances ${runsNote(twoRuns)}; -sqlite: the SQLite dispatcher in one process, ${Math.round(sqlite.perSecond)}/s`,
  };
}

/** Concurrencies the peer runs at; its best is the baseline. */
const PEER_CONCURRENCIES = [8, 32];

/** Runs of each configuration (interleaved); the best counts. */
const ROUNDS = 3;

/**
 * `postgres-pipeline`: launches through one and two service processes on one PostgreSQL database
 * and one chain process, beside one SQLite service on the same kind of chain.
 */
export async function benchPostgresPipeline(launches = 60): Promise<{ results: BenchResult[]; note: string }> {
  if (!benchDatabaseUrl) return { results: [], note: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL server' };
  const pipeSqlite = await measureSharedChainPipeline({ instances: 1, count: launches, postgres: false });
  const pipe1 = await measureSharedChainPipeline({ instances: 1, count: launches, postgres: true });
  const pipe2 = await measureSharedChainPipeline({ instances: 2, count: launches, postgres: true });
  return {
    results: [result('pipeline-pg-1', pipe1, 'launches/s', pipeSqlite), result('pipeline-pg-2', pipe2, 'launches/s', pipeSqlite)],
    note: `${launches} launches through service processes on one npm run chain (RPC), baseline one SQLite service on the same kind of chain`,
  };
}
