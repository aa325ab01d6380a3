import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PublicKey } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createService } from '../../src/app/service.js';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { loadConfig } from '../../src/config/config.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { onPostgres } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import type { TestService } from '../support/service.js';
import { creatorWallet, signAll } from './support/creator.js';

// SQLite and the embedded chain in one data directory, as `npm start` runs. The launch is created
// and signed through the API; then real runner processes (test/launches/support/crashingRunner.ts)
// are killed with SIGKILL: right after the signatures were accepted (the launch claimed, nothing
// sent), mid-way through sending (create_mint executed on the chain, its confirmation not seen),
// and after the last step's rent return was sent; a service in this process then finishes it.
const dir = mkdtempSync(join(tmpdir(), 'creator-crash-'));
const env = { ...process.env, DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', TEST_DATABASE_URL: '', DATABASE_URL: '', CREATOR_SIGNED: '1' };
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SOL = 1_000_000_000;

function runChild(crashAt: string): { signal: NodeJS.Signals | null; status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '..', 'launches', 'support', 'crashingRunner.ts')], {
    env: { ...env, CRASH_AT: crashAt },
    encoding: 'utf8',
    timeout: 150_000,
  });
  return { signal: result.signal, status: result.status, stdout: result.stdout, stderr: result.stderr };
}

// Right after the signatures were accepted (claimed, nothing sent); mid-way through sending (the first
// transaction executed, unconfirmed: its nonce has moved, so only its status says it landed); the
// rent return sent after the last step's transactions, the step not yet complete.
const CRASH_POINTS = ['boundary:create_mint', 'sent:create_mint', 'sent:close_nonces'];

// SQLite by construction (the data directory's file): the suite's PostgreSQL half would repeat it as
// it is, so it runs in the SQLite half only (creatorInstances.test.ts kills an instance on PostgreSQL).
describe.skipIf(onPostgres)('a creator-signed launch across SIGKILLs', () => {
  it('mints once and runs every step once when killed right after the signatures and mid-way through sending', async () => {
    const config = loadConfig(env);
    const service = await createService(config, { logger: silentLogger(), clock: systemClock });
    const creator = creatorWallet();
    let launchId: string;
    let expectedSpend: number;
    try {
      const key = (await createApiKey(service.db, { owner: 'acme', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
      const t = { request: (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) => Promise.resolve(service.app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: init.json === undefined ? undefined : JSON.stringify(init.json) })) } as unknown as TestService;
      await service.chain.requestAirdrop!(new PublicKey(creator.address), BigInt(2 * SOL));
      const body = launchBody({ creator: creator.address, signing: 'creator' });
      const quote = ((await (await t.request('/api/launches/quote', { method: 'POST', json: body })).json()) as { quote: { totalLamports: string; accounts: Array<{ rentLamports: string; returned?: true }> } }).quote;
      expectedSpend = Number(quote.totalLamports) - quote.accounts.filter((a) => a.returned).reduce((n, a) => n + Number(a.rentLamports), 0);
      const created = await t.request('/api/launches', { method: 'POST', json: body });
      expect(created.status).toBe(202);
      launchId = ((await created.json()) as { launch: { id: string } }).launch.id;
      expect((await signAll(t, key, launchId, creator)).status).toBe(200);
      const signed = await signAll(t, key, launchId, creator);
      expect(signed.body.signing?.status).toBe('signed');
    } finally {
      await service.stop();
    }

    for (const point of CRASH_POINTS) {
      const run = runChild(point);
      expect(run.stdout, `run crashing at ${point}: ${run.stderr.slice(0, 500)}`).toContain(`crashing at ${point}`);
      expect(run.signal).toBe('SIGKILL');
    }
    // The killed runner's lease (300 ms) has expired: a service on the same directory finishes the launch.
    await new Promise((resolve) => setTimeout(resolve, 400)); // the lease is wall-clock time in the database
    const resumed = await createService(config, { logger: silentLogger(), clock: systemClock });
    try {
      expect(await resumed.runner.drain()).toBe(1);
      const { db, chain } = resumed;
      const launch = await db.selectFrom('launches').selectAll().where('id', '=', launchId).executeTakeFirstOrThrow();
      expect(launch.status, launch.error ?? '').toBe('complete');
      const events = await db.selectFrom('outbox_events').select(['event', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute();
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
      const steps = events.filter((e) => e.event === 'launch.step_complete').map((e) => (JSON.parse(e.body) as { data: { step: string } }).data.step);
      expect(steps).toEqual(['create_mint', 'create_metadata', 'distribute_supply']);
      const complete = JSON.parse(events[events.length - 1]!.body) as { data: { mint: string; transactions: Array<{ type: string; signature: string }> } };
      expect(complete.data.transactions.map((tx) => tx.type)).toEqual(['mint', 'distribution', 'nonce_rent']);
      // Each creator-signed transaction landed once: its signature is the one the creator signed, found on the chain.
      const signed = await db.selectFrom('launch_signing_txs').select(['step', 'signature']).where('launch_id', '=', launchId).orderBy('idx').execute();
      expect(complete.data.transactions.map((tx) => tx.signature)).toEqual(signed.filter((r) => r.step !== 'setup').map((r) => r.signature));
      for (const tx of complete.data.transactions) expect((await chain.getSignatureStatus(tx.signature))?.err ?? null).toBeNull();
      // One mint: the launch's derived mint holds the whole supply, minted once.
      const mint = await chain.getAccountInfo(new PublicKey(complete.data.mint));
      expect(mint).not.toBeNull();
      expect(mint!.data.readBigUInt64LE(36)).toBe(1_000_000n * 10n ** 6n);
      // Every transaction paid for once, the rent returned: the creator lost exactly the quote less the rent it got back.
      expect(2 * SOL - (await chain.getBalance(new PublicKey(creator.address)))).toBe(expectedSpend);
    } finally {
      await resumed.stop();
    }
  }, 480_000);
});
