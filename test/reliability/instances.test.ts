import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getMint, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { migrateToLatest, type Db } from '../../src/db/database.js';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { startChainProcess } from '../chain/support/chainProcess.js';
import { createPostgresDatabase, onPostgres, openDatabaseAt } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { startChildService, type ChildService } from './support/childService.js';
import { startRecordingReceiver, type RecordingReceiver } from './support/recordingReceiver.js';

// docs/architecture.md, SQLite and PostgreSQL: three service processes on one PostgreSQL database and one chain
// (`npm run chain`), a real receiver on 127.0.0.1. PostgreSQL only: SQLite is one process per data
// directory by design.
if (!onPostgres) console.log('instances.test.ts: skipped, no TEST_DATABASE_URL (PostgreSQL) set');

const INSTANCES = 3;
const LAUNCHES = 60;
const MAX_IN_FLIGHT = 16;
const MAX_ATTEMPTS = 5;
const SECRET = 'whsec_instances_0123456789abcdef';
const BREAKER_RESET_MS = 3_000;
// Per key and minute; the launches below use one key (63 requests), the rate-limit test another.
const RATE_LIMIT = 100;

/** Resolves when `check` is true, checking every `everyMs`; fails with `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs)); // the work happens in other processes: poll their database
  }
}

/** A host that answers 500 to everything and notes when each request arrived. */
async function startFailingHost(): Promise<{ url: string; arrivals: number[]; close(): Promise<void> }> {
  const arrivals: number[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(Date.now());
      res.writeHead(500).end('down');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/down`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(!onPostgres)('three instances on one PostgreSQL database and one chain', () => {
  const dir = mkdtempSync(join(tmpdir(), 'instances-'));
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let db: Db;
  let closeDb: () => Promise<void>;
  let chain: Awaited<ReturnType<typeof startChainProcess>>;
  let receiver: RecordingReceiver;
  let env: Record<string, string>;
  let key: string;
  const services: Array<ChildService | undefined> = [];

  const start = (i: number) =>
    startChildService({ ...env, DATA_DIR: join(dir, `instance-${i}`) }).then((svc) => {
      services[i] = svc;
      return svc;
    });

  beforeAll(async () => {
    database = await createPostgresDatabase();
    ({ db, close: closeDb } = openDatabaseAt(database.url));
    await migrateToLatest(db);
    key = (await createApiKey(db, { owner: 'scale', scopes: ['launches:write', 'launches:read', 'admin'], now: Date.now() })).key;
    chain = await startChainProcess({ DATA_DIR: join(dir, 'chain') });
    const payer = Keypair.generate();
    const payerPath = join(dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    const connection = new Connection(chain.url, 'confirmed');
    await connection.requestAirdrop(payer.publicKey, 200 * LAMPORTS_PER_SOL);
    receiver = await startRecordingReceiver(() => Math.floor(Math.random() * 20));
    env = {
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: '4',
      SOLANA_RPC_URL: chain.url,
      // Two launches at a time per instance, as this test was sized (the RPC default is 16).
      RUNNER_CONCURRENCY: '2',
      SOLANA_PAYER_KEYPAIR: payerPath,
      SECRET_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
      NODE_ENV: 'development',
      RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      // One key sends all 60 launches at once.
      MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: '1000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      WEBHOOK_POLL_INTERVAL_MS: '200ms',
      WEBHOOK_TIMEOUT_MS: '1s',
      WEBHOOK_LEASE_MS: '2s',
      RUNNER_LEASE_MS: '3s',
      BREAKER_RESET_TIMEOUT: `${BREAKER_RESET_MS}ms`,
    };
    await Promise.all(Array.from({ length: INSTANCES }, (_, i) => start(i)));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s?.kill('SIGKILL')));
    await receiver?.close();
    await chain?.stop();
    await closeDb?.();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = async (i: number, body: Record<string, unknown>) => {
    const res = await request(`${services[i]!.origin}/api/launches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.body.json()) as { launch?: { id: string } };
    if (res.statusCode !== 202 || !json.launch) throw new Error(`instance ${i}: ${res.statusCode} ${JSON.stringify(json)}`);
    return json.launch.id;
  };

  it(`${LAUNCHES} launches round-robin through three instances, one SIGKILLed mid-way and restarted: every launch complete, one mint each, every event delivered`, async () => {
    const accepted: Array<{ id: string; body: Record<string, unknown> }> = [];
    const create = async (from: number, to: number) => {
      await Promise.all(
        Array.from({ length: to - from }, async (_, k) => {
          const n = from + k;
          const body = launchBody({ webhookUrl: receiver.url, webhookSecret: SECRET, totalSupply: String(1_000 + n), decimals: n % 10 });
          accepted.push({ id: await post(n % INSTANCES, body), body });
        }),
      );
    };
    await create(0, LAUNCHES / 2);
    // Kill instance 1 while the work is in progress (events are being delivered).
    await receiver.waitFor(20);
    expect(await services[1]!.kill('SIGKILL')).toBe('SIGKILL');
    const inFlightAtKill = await db.selectFrom('deliveries').select('id').where('status', '=', 'pending').where('lease_owner', 'is not', null).execute();
    await start(1);
    await create(LAUNCHES / 2, LAUNCHES);
    expect(accepted).toHaveLength(LAUNCHES);

    await until('every launch complete and every delivery settled', async () => {
      const open = await db.selectFrom('launches').select('id').where('status', '!=', 'complete').execute();
      const pending = await db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute();
      return open.length === 0 && pending.length === 0;
    });

    const launches = await db.selectFrom('launches').select(['id', 'status', 'results']).execute();
    expect(launches).toHaveLength(LAUNCHES);
    expect(launches.every((l) => l.status === 'complete')).toBe(true);
    // The launches' events (the owner's funding events go to its endpoints, of which it has none here).
    const events = await db.selectFrom('outbox_events').select(['id', 'launch_id', 'event']).where('launch_id', 'like', 'lch_%').execute();
    for (const l of launches) expect(events.filter((e) => e.launch_id === l.id && e.event === 'launch.complete')).toHaveLength(1);

    // One mint per launch, holding exactly its supply (a second mint-to would have doubled it).
    const mints = launches.map((l) => (JSON.parse(l.results) as { mint: string }).mint);
    expect(new Set(mints).size).toBe(LAUNCHES);
    const connection = new Connection(chain.url, 'confirmed');
    for (const a of accepted) {
      const mint = mints[launches.findIndex((l) => l.id === a.id)]!;
      const info = await getMint(connection, new PublicKey(mint), 'confirmed', TOKEN_2022_PROGRAM_ID);
      expect(info.supply).toBe(BigInt(a.body.totalSupply as string) * 10n ** BigInt(a.body.decimals as number));
    }

    // Every event delivered, signed; duplicates only from the attempts in flight at the kill and
    // from attempts that timed out (on a loaded machine the receiver may get a request whose answer
    // comes after WEBHOOK_TIMEOUT_MS: the attempt fails, the retry delivers it again). Both counted
    // from what this run did, not a fixed allowance.
    const ids = receiver.received.map((r) => verifyWebhook<{ id: string }>(r.body, r.headers, SECRET, { toleranceSeconds: 86_400 }).payload.id);
    const unique = new Set(ids);
    expect(unique).toEqual(new Set(events.map((e) => e.id)));
    const timedOut = await db.selectFrom('delivery_attempts').select('id').where('outcome', '=', 'failure').where('error_class', '=', 'timeout').execute();
    expect(ids.length - unique.size, `${inFlightAtKill.length} attempts in flight at the kill, ${timedOut.length} timed out`).toBeLessThanOrEqual(inFlightAtKill.length + timedOut.length);
    const deliveries = await db.selectFrom('deliveries').select(['status', 'attempt_count']).execute();
    expect(deliveries.every((d) => d.status === 'delivered')).toBe(true);
    expect(Math.max(...deliveries.map((d) => d.attempt_count))).toBeLessThanOrEqual(MAX_ATTEMPTS);
  }, 150_000);

  it('a failing host opens one breaker that all three instances show, with exactly one half-open trial across them', async () => {
    const host = await startFailingHost();
    try {
      const hostKey = new URL(host.url).host;
      for (let i = 0; i < INSTANCES; i++) await post(i, launchBody({ webhookUrl: host.url, webhookSecret: SECRET }));
      const breaker = () => db.selectFrom('endpoint_breakers').select(['state', 'opened_at', 'version']).where('host', '=', hostKey).executeTakeFirst();
      await until('the breaker to open', async () => (await breaker())?.state === 'open');
      const views = async () =>
        Promise.all(
          services.map(async (s) => {
            const res = await request(`${s!.origin}/api/health`);
            const body = (await res.body.json()) as { circuitBreakers: Record<string, { state: string }> };
            return body.circuitBreakers[hostKey]?.state;
          }),
        );
      // Every instance shows what the database says (health reads a copy at most ~1 s old).
      await until('all three instances to show the breaker not closed', async () => (await views()).every((s) => s === 'open' || s === 'half-open'), 20_000, 200);

      // Two reset periods, each counted from a moment every instance already shows the breaker and it
      // is open (attempts started before it opened are over): each ends with exactly one trial across
      // the three, which fails and re-opens the breaker.
      for (let period = 0; period < 2; period++) {
        await until('the breaker open again', async () => (await breaker())?.state === 'open', 30_000, 50);
        const from = Date.now();
        const opened = (await breaker())!.opened_at!;
        await until('the half-open trial to fail and re-open the breaker', async () => {
          const b = await breaker();
          return b?.state === 'open' && b.opened_at! > opened;
        }, 30_000, 50);
        const to = Date.now();
        const trials = host.arrivals.filter((t) => t >= from && t <= to).length;
        expect(trials, `period ${period}: requests to the failing host between two openings`).toBe(1);
      }
      expect((await views()).every((s) => s === 'open' || s === 'half-open')).toBe(true);
    } finally {
      await host.close();
    }
  }, 90_000);

  it(`a rate limit of ${RATE_LIMIT}/min holds across the three instances (±1 window)`, async () => {
    const limited = (await createApiKey(db, { owner: 'limited', scopes: ['launches:read'], now: Date.now() })).key;
    const firstWindow = Math.floor(Date.now() / 60_000);
    const statuses: number[] = [];
    // Three at a time, one to each instance, 1.5 × the limit in all.
    for (let i = 0; i < (RATE_LIMIT * 3) / 2; i += INSTANCES) {
      statuses.push(
        ...(await Promise.all(
          services.map(async (s) => {
            const res = await request(`${s!.origin}/api/launches?limit=1`, { headers: { authorization: `Bearer ${limited}` } });
            await res.body.dump();
            return res.statusCode;
          }),
        )),
      );
    }
    const windows = Math.floor(Date.now() / 60_000) - firstWindow + 1;
    const admitted = statuses.filter((s) => s === 200).length;
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    // In one window exactly the limit gets through, whichever instance answers; across a minute boundary at most one more window's worth.
    if (windows === 1) expect(admitted).toBe(RATE_LIMIT);
    else expect(admitted).toBeLessThanOrEqual(RATE_LIMIT * windows);
  }, 60_000);
});
