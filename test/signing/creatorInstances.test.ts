import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getMint, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { migrateToLatest, type Db } from '../../src/db/database.js';
import { startChainProcess } from '../chain/support/chainProcess.js';
import { startChildService, type ChildService } from '../reliability/support/childService.js';
import { createPostgresDatabase, onPostgres, openDatabaseAt } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { creatorWallet, type SigningView } from './support/creator.js';

// docs/signing.md: two service processes on one PostgreSQL database and one chain (`npm run chain`,
// served over RPC). A creator-signed launch is created on one, read and signed through both, and the
// instance that accepted the last signatures is SIGKILLed at once; the other lands the launch.
// PostgreSQL only: SQLite is one process per data directory.
if (!onPostgres) console.log('signing/creatorInstances.test.ts: skipped, no TEST_DATABASE_URL (PostgreSQL) set');

/** Resolves when `check` is true; fails with `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100)); // the work happens in other processes: poll their database
  }
}

/** Waits for an airdrop by polling its status (the chain is another process). */
async function airdrop(connection: Connection, to: PublicKey, lamports: number): Promise<void> {
  const signature = await connection.requestAirdrop(to, lamports);
  await until(`airdrop ${signature}`, async () => {
    const { value } = await connection.getSignatureStatuses([signature]);
    return value[0]?.confirmationStatus === 'confirmed' || value[0]?.confirmationStatus === 'finalized';
  });
}

describe.skipIf(!onPostgres)('a creator-signed launch on two instances', () => {
  const dir = mkdtempSync(join(tmpdir(), 'creator-instances-'));
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let db: Db;
  let closeDb: () => Promise<void>;
  let chain: Awaited<ReturnType<typeof startChainProcess>>;
  let connection: Connection;
  let payer: Keypair;
  let key: string;
  const services: ChildService[] = [];

  beforeAll(async () => {
    database = await createPostgresDatabase();
    ({ db, close: closeDb } = openDatabaseAt(database.url));
    await migrateToLatest(db);
    key = (await createApiKey(db, { owner: 'acme', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    chain = await startChainProcess({ DATA_DIR: join(dir, 'chain') });
    connection = new Connection(chain.url, 'confirmed');
    payer = Keypair.generate();
    writeFileSync(join(dir, 'payer.json'), JSON.stringify([...payer.secretKey]));
    await airdrop(connection, payer.publicKey, 10 * LAMPORTS_PER_SOL);
    const env = {
      DATABASE_URL: database.url,
      DATABASE_POOL_SIZE: '4',
      SOLANA_RPC_URL: chain.url,
      SOLANA_PAYER_KEYPAIR: join(dir, 'payer.json'),
      SECRET_KEY: randomBytes(32).toString('base64'),
      FUNDING_DEV_AIRDROP: '0',
      LOG_LEVEL: 'silent',
      NODE_ENV: 'development',
      // The killed instance's lease on the launch passes soon.
      RUNNER_LEASE_MS: '3s',
    };
    services.push(...(await Promise.all([0, 1].map((i) => startChildService({ ...env, DATA_DIR: join(dir, `instance-${i}`) })))));
  }, 240_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.kill('SIGKILL')));
    await chain?.stop();
    await closeDb?.();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (i: number, method: string, path: string, json?: unknown) => {
    const res = await request(`${services[i]!.origin}${path}`, {
      method: method as 'GET' | 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, any> };
  };

  it('is created on one instance, signed through both, and lands once after the instance that took the last signatures is SIGKILLed', async () => {
    const creator = creatorWallet();
    await airdrop(connection, new PublicKey(creator.address), 2 * LAMPORTS_PER_SOL);
    const funding = (await call(0, 'GET', '/api/funding')).body.funding as { address: string };
    const balance = (address: string | PublicKey) => connection.getBalance(new PublicKey(address), 'confirmed');
    const fundingBefore = await balance(funding.address);
    const payerBefore = await balance(payer.publicKey);
    const body = launchBody({ creator: creator.address, signing: 'creator' });
    const quote = (await call(1, 'POST', '/api/launches/quote', body)).body.quote as { totalLamports: string; accounts: Array<{ rentLamports: string; returned?: true }> };
    const returned = quote.accounts.filter((a) => a.returned).reduce((n, a) => n + Number(a.rentLamports), 0);

    const created = await call(0, 'POST', '/api/launches', body);
    expect(created.status).toBe(202);
    const id = created.body.launch.id as string;
    const sign = (tx: SigningView['transactions'][number]) => ({ index: tx.index, signature: creator.sign(Buffer.from(tx.message, 'base64')) });

    // The setup, read from the other instance, signed there: it lands and the launch round is offered.
    const setup = (await call(1, 'GET', `/api/launches/${id}/signing`)).body.signing as SigningView;
    expect(setup.transactions.map((tx) => tx.step)).toEqual(['setup']);
    const afterSetup = await call(1, 'POST', `/api/launches/${id}/signatures`, { signatures: setup.transactions.map(sign) });
    expect(afterSetup.status).toBe(200);
    // Both instances show the same launch round.
    const rounds = await Promise.all([0, 1].map(async (i) => (await call(i, 'GET', `/api/launches/${id}/signing`)).body.signing as SigningView));
    expect(rounds[0]).toEqual(rounds[1]);
    const offered = rounds[0]!.transactions.filter((tx) => !tx.signed);
    expect(offered.map((tx) => tx.step)).toEqual(['create_mint', 'distribute_supply', 'close_nonces']);

    // The first signature (close_nonces, the rent return, which the launch round takes first) through
    // instance 0, the rest through instance 1, which queues the launch and is killed at once.
    expect((await call(0, 'POST', `/api/launches/${id}/signatures`, { signatures: [sign(offered[2]!)] })).body.signing.status).toBe('awaiting_signatures');
    const last = await call(1, 'POST', `/api/launches/${id}/signatures`, { signatures: offered.slice(0, 2).map(sign) });
    expect(last.body.signing.status).toBe('signed');
    expect(await services[1]!.kill('SIGKILL')).toBe('SIGKILL');

    await until('the launch to end', async () => {
      const row = await db.selectFrom('launches').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      return row.status === 'complete' || row.status === 'failed';
    }, 90_000).catch(async (error: unknown) => {
      console.log(JSON.stringify(await db.selectFrom('launches').selectAll().where('id', '=', id).execute(), null, 1));
      console.log(JSON.stringify(await db.selectFrom('launch_steps').selectAll().where('launch_id', '=', id).execute(), null, 1));
      throw error;
    });
    const launch = (await call(0, 'GET', `/api/launches/${id}`)).body.launch as { status: string; results: { mint: string }; error?: unknown };
    expect(launch.status, JSON.stringify(launch.error)).toBe('complete');

    // Every step once, every event once.
    const events = await db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', id).orderBy('sequence').execute();
    expect(events.map((e) => e.event)).toEqual([
      'launch.awaiting_signatures',
      'launch.awaiting_signatures',
      'launch.queued',
      'launch.processing',
      'launch.step_complete',
      'launch.step_complete',
      'launch.step_complete',
      'launch.complete',
    ]);
    const steps = await db.selectFrom('launch_steps').select(['name', 'status']).where('launch_id', '=', id).execute();
    expect(steps.every((s) => s.status === 'complete')).toBe(true);
    // One mint, holding exactly the supply (a second mint-to would have doubled it).
    const mint = await getMint(connection, new PublicKey(launch.results.mint), 'confirmed', TOKEN_2022_PROGRAM_ID);
    expect(mint.supply).toBe(BigInt(body.totalSupply as string) * 10n ** BigInt(body.decimals as number));
    // The owner's funding wallet and the service's payer paid nothing; the creator paid the quote, less the rent it got back.
    expect(await balance(funding.address)).toBe(fundingBefore);
    expect(await balance(payer.publicKey)).toBe(payerBefore);
    expect(2 * LAMPORTS_PER_SOL - (await balance(creator.address))).toBe(Number(quote.totalLamports) - returned);
  }, 240_000);
});
