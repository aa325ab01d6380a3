import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getAccount, getAssociatedTokenAddressSync, getMint, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
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

// docs/architecture.md, SQLite and PostgreSQL: two service processes on one PostgreSQL database and one chain (`npm run chain`). One
// is frozen with SIGSTOP while it holds leases (launches mid-step, webhook attempts in flight), the
// other must take its work over once those leases expire and finish everything while it is still
// frozen; then the frozen one is woken (SIGCONT) with every lease it holds long gone — a zombie —
// and nothing it does may show: no second transaction on chain (the supply stays exact), no step
// reported twice, no delivery's state moved back. PostgreSQL only: SQLite is one process per data
// directory by design (test/reliability/sigstop.test.ts freezes that one process).
if (!onPostgres) console.log('zombie.test.ts: skipped, no TEST_DATABASE_URL (PostgreSQL) set');

const LAUNCHES = 8;
const MAX_IN_FLIGHT = 16;
const SECRET = 'whsec_zombie_0123456789abcdef';
const RUNNER_LEASE_MS = 2_000;
const WEBHOOK_TIMEOUT_MS = 1_000;

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves when `check` is true; fails with `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs); // the work happens in other processes: poll their database
  }
}

describe.skipIf(!onPostgres)('an instance frozen past its leases on PostgreSQL, then woken', () => {
  const dir = mkdtempSync(join(tmpdir(), 'zombie-'));
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let db: Db;
  let closeDb: () => Promise<void>;
  let chain: Awaited<ReturnType<typeof startChainProcess>>;
  let receiver: RecordingReceiver;
  let key: string;
  const services: ChildService[] = [];
  let frozen: number | undefined;
  let env: Record<string, string>;
  const start = async (i: number) => {
    const svc = await startChildService({ ...env, DATA_DIR: join(dir, `instance-${i}`) });
    services.push(svc);
    return svc;
  };

  beforeAll(async () => {
    database = await createPostgresDatabase();
    ({ db, close: closeDb } = openDatabaseAt(database.url));
    await migrateToLatest(db);
    key = (await createApiKey(db, { owner: 'zombie', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    chain = await startChainProcess({ DATA_DIR: join(dir, 'chain') });
    const payer = Keypair.generate();
    const payerPath = join(dir, 'payer.json');
    writeFileSync(payerPath, JSON.stringify([...payer.secretKey]));
    await new Connection(chain.url, 'confirmed').requestAirdrop(payer.publicKey, 100 * LAMPORTS_PER_SOL);
    // Answers after up to 300 ms, so attempts are in flight when the process freezes.
    receiver = await startRecordingReceiver(() => random(0, 300));
    env = {
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: '4',
      SOLANA_RPC_URL: chain.url,
      SOLANA_PAYER_KEYPAIR: payerPath,
      SECRET_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
      NODE_ENV: 'development',
      RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      WEBHOOK_POLL_INTERVAL_MS: '100ms',
      WEBHOOK_TIMEOUT_MS: `${WEBHOOK_TIMEOUT_MS}ms`,
      WEBHOOK_LEASE_MS: '2s',
      RUNNER_LEASE_MS: `${RUNNER_LEASE_MS}ms`,
    };
  }, 90_000);

  afterAll(async () => {
    if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
    await Promise.all(services.map((s) => s.kill('SIGKILL')));
    await receiver?.close();
    await chain?.stop();
    await closeDb?.();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the other instance finishes the frozen one\'s launches and deliveries, and the woken one changes nothing: one transaction per step on chain, one event per step, every event delivered', async () => {
    // The first instance alone takes the launches, so every lease held at the freeze is its own.
    const zombie = await start(0);
    const accepted: Array<{ id: string; body: Record<string, unknown> }> = [];
    await Promise.all(
      Array.from({ length: LAUNCHES }, async () => {
        const body = launchBody({ webhookUrl: receiver.url, webhookSecret: SECRET, totalSupply: String(random(1_000, 9_999_999)), decimals: random(0, 9) });
        const res = await request(`${zombie.origin}/api/launches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const json = (await res.body.json()) as { launch?: { id: string } };
        expect(res.statusCode).toBe(202);
        accepted.push({ id: json.launch!.id, body });
      }),
    );

    // Freeze it once it holds work: launches it runs, with webhooks already going out.
    const owner = async () => {
      const launches = await db.selectFrom('launches').select(['lease_owner']).where('status', '=', 'processing').where('lease_owner', 'is not', null).execute();
      const deliveries = await db.selectFrom('deliveries').select(['lease_owner']).where('status', '=', 'pending').where('lease_owner', 'is not', null).execute();
      return { launches: launches.map((l) => l.lease_owner!), deliveries: deliveries.map((d) => d.lease_owner!) };
    };
    await until('the first instance to hold work', async () => {
      const held = await owner();
      return held.launches.length > 0 && receiver.received.length > 0;
    }, 60_000, 20);
    process.kill(zombie.child.pid!, 'SIGSTOP');
    frozen = zombie.child.pid!;
    await sleep(500); // its last statements, already sent, reach the database
    const atFreeze = await owner();
    expect(atFreeze.launches.length, 'launches the frozen instance holds').toBeGreaterThan(0);
    // Then the second instance starts, and finds the frozen one's work under leases that run out.
    const survivor = await start(1);

    // The survivor finishes everything while the zombie is still frozen: every launch complete, every delivery settled.
    await until('the survivor to finish every launch and delivery', async () => {
      const open = await db.selectFrom('launches').select('id').where('status', 'not in', ['complete', 'failed']).execute();
      const pending = await db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute();
      const total = await db.selectFrom('deliveries').select('id').execute();
      return open.length === 0 && pending.length === 0 && total.length > 0;
    }, 90_000);
    const before = {
      launches: await db.selectFrom('launches').select(['id', 'status', 'results', 'updated_at']).orderBy('id').execute(),
      events: await db.selectFrom('outbox_events').select(['id', 'launch_id', 'event', 'body']).where('launch_id', 'like', 'lch_%').orderBy('id').execute(),
      deliveries: await db.selectFrom('deliveries').select(['id', 'status', 'attempt_count', 'lease_token']).orderBy('id').execute(),
    };
    const transactionsBefore = await Promise.all(before.launches.map(async (l) => chainSignatures(chain.url, l.results)));

    // Wake the zombie, its leases long expired, and give it time to act on whatever it held.
    process.kill(zombie.child.pid!, 'SIGCONT');
    frozen = undefined;
    await sleep(3 * RUNNER_LEASE_MS + WEBHOOK_TIMEOUT_MS);
    const [health] = await Promise.all([request(`${zombie.origin}/api/health`).then(async (r) => (await r.body.dump(), r.statusCode)), request(`${survivor.origin}/api/health`).then((r) => r.body.dump())]);
    expect(health, 'the woken instance is alive and answering').toBe(200);

    // Nothing it did shows in the database.
    const launches = await db.selectFrom('launches').select(['id', 'status', 'results', 'updated_at']).orderBy('id').execute();
    expect(launches).toEqual(before.launches);
    expect(launches.map((l) => l.id).sort()).toEqual(accepted.map((a) => a.id).sort());
    expect(launches.every((l) => l.status === 'complete')).toBe(true);
    const events = await db.selectFrom('outbox_events').select(['id', 'launch_id', 'event', 'body']).where('launch_id', 'like', 'lch_%').orderBy('id').execute();
    expect(events).toEqual(before.events);
    const deliveries = await db.selectFrom('deliveries').select(['id', 'status', 'attempt_count', 'lease_token']).orderBy('id').execute();
    expect(deliveries).toEqual(before.deliveries);
    expect(deliveries.every((d) => d.status === 'delivered')).toBe(true);
    expect(await db.selectFrom('dead_letters').select('id').execute()).toHaveLength(0);

    // One launch.complete and one step_complete event per step of every launch.
    const stepOf = (body: string) => (JSON.parse(body) as { data: { step: string } }).data.step;
    for (const l of launches) {
      expect(events.filter((e) => e.launch_id === l.id && e.event === 'launch.complete')).toHaveLength(1);
      const steps = events.filter((e) => e.launch_id === l.id && e.event === 'launch.step_complete').map((e) => stepOf(e.body));
      expect(steps).toHaveLength(3);
      expect(new Set(steps).size).toBe(steps.length);
    }

    // On chain: one mint per launch holding exactly its supply in the creator's account (a zombie's
    // second mint-to would have doubled it), and no transaction beyond those the launches recorded.
    const connection = new Connection(chain.url, 'confirmed');
    const mints = launches.map((l) => (JSON.parse(l.results) as { mint: string }).mint);
    expect(new Set(mints).size).toBe(LAUNCHES);
    for (const a of accepted) {
      const mint = new PublicKey(mints[launches.findIndex((l) => l.id === a.id)]!);
      const supply = BigInt(a.body.totalSupply as string) * 10n ** BigInt(a.body.decimals as number);
      expect((await getMint(connection, mint, 'confirmed', TOKEN_2022_PROGRAM_ID)).supply).toBe(supply);
      const ata = getAssociatedTokenAddressSync(mint, new PublicKey(a.body.creator as string), false, TOKEN_2022_PROGRAM_ID);
      expect((await getAccount(connection, ata, 'confirmed', TOKEN_2022_PROGRAM_ID)).amount).toBe(supply);
    }
    expect(await Promise.all(launches.map(async (l) => chainSignatures(chain.url, l.results)))).toEqual(transactionsBefore);

    // Every event received, signed; resends only of what was leased when the zombie froze.
    const ids = receiver.received.map((r) => verifyWebhook<{ id: string }>(r.body, r.headers, SECRET, { toleranceSeconds: 86_400 }).payload.id);
    const unique = new Set(ids);
    expect(unique).toEqual(new Set(events.map((e) => e.id)));
    expect(ids.length - unique.size, `duplicates received; ${atFreeze.deliveries.length} deliveries were leased at the freeze`).toBeLessThanOrEqual(atFreeze.deliveries.length);
  }, 240_000);
});

/** The signatures of every transaction that touched a launch's mint, as the chain reports them. */
async function chainSignatures(url: string, results: string): Promise<string[]> {
  const { mint } = JSON.parse(results) as { mint: string };
  const connection = new Connection(url, 'confirmed');
  const signatures = await connection.getSignaturesForAddress(new PublicKey(mint), { limit: 100 }, 'confirmed');
  return signatures.map((s) => s.signature).sort();
}
