import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PublicKey } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createChainBackend } from '../../src/app/serviceChain.js';
import { loadConfig } from '../../src/config/config.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { createFunding } from '../../src/funding/funding.js';
import { createLaunch } from '../../src/launches/createLaunch.js';
import { planFromRequest } from '../../src/launches/plan.js';
import { parseLaunchRequest, storedRequest } from '../../src/launches/request.js';
import { stepsFor } from '../../src/launches/steps.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { launchBody } from '../support/fixtures.js';

// SQLite and the embedded chain in one data directory, as `npm start` runs: real processes killed
// with SIGKILL (test/launches/support/crashingRunner.ts) at the instants where the chain and the
// ledger could disagree: a transaction confirmed and its step's completion (with its spend) not yet
// committed, and a transaction sent and not yet confirmed.
const dir = mkdtempSync(join(tmpdir(), 'funding-crash-'));
const env = { ...process.env, DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', FUNDED: '1', TEST_DATABASE_URL: '' };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runChild(crashAt: string): { signal: NodeJS.Signals | null; status: number | null; stdout: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '..', 'launches', 'support', 'crashingRunner.ts')], {
    env: { ...env, CRASH_AT: crashAt },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { signal: result.signal, status: result.status, stdout: result.stdout };
}

describe('the ledger across SIGKILLs', () => {
  it('records each transaction’s spend once and releases the rest, matching what left the wallet on chain', async () => {
    const config = loadConfig(env);
    let opened = openDatabase(config.databasePath);
    await migrateToLatest(opened.db);
    let chain = await createChainBackend(config, { db: opened.db, clock: systemClock, logger: silentLogger() });
    const funding = createFunding({ db: opened.db, chain, secretBox: createSecretBox(config.secretKey), clock: systemClock, logger: silentLogger(), devAirdropLamports: 2_000_000_000 });
    const wallet = await funding.wallet('acme');
    const before = await chain.getBalance(new PublicKey(wallet.address));
    const parsed = parseLaunchRequest(launchBody(), { requireHttps: false });
    if (!parsed.ok) throw new Error('fixture request invalid');
    const prepared = await funding.prepare('acme', planFromRequest('quote', storedRequest(parsed.value)), stepsFor(parsed.value));
    const launchId = await createLaunch(
      { db: opened.db, clock: systemClock, secretBox: createSecretBox(config.secretKey), signal: { notify: () => undefined } },
      { owner: 'acme', request: parsed.value, requestId: 'req-crash', payer: wallet.address, reserve: (trx, id) => funding.reserve(trx, prepared, id) },
    );
    await chain.close();
    await opened.close();

    for (const point of ['done:create_mint', 'sent:distribute_supply', 'done:distribute_supply']) {
      const run = runChild(point);
      expect(run.stdout, `run crashing at ${point}`).toContain(`crashing at ${point}`);
      expect(run.signal).toBe('SIGKILL');
    }
    const last = runChild('');
    expect(last.status).toBe(0);

    opened = openDatabase(config.databasePath);
    chain = await createChainBackend(config, { db: opened.db, clock: systemClock, logger: silentLogger() });
    try {
      const launch = await opened.db.selectFrom('launches').select(['status']).where('id', '=', launchId).executeTakeFirstOrThrow();
      expect(launch.status).toBe('complete');
      const entries = await opened.db.selectFrom('funding_ledger').selectAll().where('launch_id', '=', launchId).orderBy('created_at').execute();
      const of = (kind: string) => entries.filter((e) => e.kind === kind);
      expect(of('reserve')).toHaveLength(1);
      expect(of('release')).toHaveLength(1);
      const spends = of('spend');
      expect(spends).toHaveLength(2);
      expect(new Set(spends.map((s) => s.signature)).size).toBe(2);
      const spent = spends.reduce((n, s) => n + Number(s.lamports), 0);
      const after = await chain.getBalance(new PublicKey(wallet.address));
      expect(before - after).toBe(spent);
      expect(Number(of('release')[0]!.lamports)).toBe(Number(of('reserve')[0]!.lamports) - spent);
      expect(BigInt(of('reserve')[0]!.lamports)).toBe(prepared.totalLamports);
    } finally {
      await chain.close();
      await opened.close();
    }
  }, 240_000);
});
