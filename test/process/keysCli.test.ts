import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findActiveKey } from '../../src/auth/apiKeys.js';
import { openDatabase } from '../../src/db/database.js';
import { readBoundOverrides } from '../../src/bounds/ownerBounds.js';
import { limitsOf } from '../../src/funding/limits.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keys(...args: string[]) {
  return keysWith({}, ...args);
}

function keysWith(env: Record<string, string>, ...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'keys.ts'), ...args], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('npm run keys', () => {
  it('creates a key printed once on its own line, lists it without the secret, and revokes it', async () => {
    const created = keys('create', '--owner', 'acme', '--scopes', 'launches:write,launches:read');
    expect(created.status).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);

    const { db, close } = openDatabase(join(dir, 'launch-service.sqlite'));
    const row = await findActiveKey(db, key);
    expect(row).toMatchObject({ owner: 'acme', scopes: 'launches:write,launches:read' });
    expect(JSON.stringify(await db.selectFrom('api_keys').selectAll().execute())).not.toContain(key);

    const listed = keys('list');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(row!.id);
    expect(listed.stdout).not.toContain(key);

    expect(keys('revoke', row!.id).status).toBe(0);
    expect(await findActiveKey(db, key)).toBeUndefined();
    await close();
  }, 30_000);

  it('refuses unknown scopes and a missing owner, creating nothing', () => {
    const bad = keys('create', '--owner', 'acme', '--scopes', 'launches:delete');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('unknown scope(s): launches:delete');
    expect(keys('create', '--scopes', 'admin').status).toBe(1);
    expect(keys('revoke', 'key_nope').status).toBe(1);
  }, 30_000);
});

describe('npm run keys -- limits', () => {
  it('sets limits given in SOL as lamports, clears one with none, keeps the others, and prints them all', async () => {
    const set = keys('limits', '--owner', 'acme', '--max-sol-per-launch', '2.5', '--max-sol-per-day', '10', '--max-launches-per-day', '7', '--low-balance-sol', '0.000000001');
    expect(set.status).toBe(0);
    const { db, close } = openDatabase(join(dir, 'launch-service.sqlite'));
    const row = await db.selectFrom('funding_wallets').selectAll().where('owner', '=', 'acme').executeTakeFirstOrThrow();
    expect(limitsOf(row)).toEqual({ maxLamportsPerLaunch: 2_500_000_000n, maxLamportsPerDay: 10_000_000_000n, maxLaunchesPerDay: 7, lowBalanceLamports: 1n });
    expect(set.stdout).toBe(`owner\tacme\naddress\t${row.address}\nmax-sol-per-launch\t2.5\nmax-sol-per-day\t10\nmax-launches-per-day\t7\nlow-balance-sol\t0.000000001\n`);
    // The wallet it made is one the service can sign with: its seed is sealed, never stored plain.
    expect(row.seed_enc).not.toMatch(/^[A-Za-z0-9+/]{43}=$/);

    const cleared = keys('limits', '--owner', 'acme', '--max-sol-per-day', 'none', '--max-launches-per-day', '0');
    expect(cleared.status).toBe(0);
    expect(cleared.stdout).toContain('max-sol-per-launch\t2.5\nmax-sol-per-day\tnone\nmax-launches-per-day\t0\n');
    const after = await db.selectFrom('funding_wallets').selectAll().where('owner', '=', 'acme').executeTakeFirstOrThrow();
    expect(limitsOf(after)).toEqual({ maxLamportsPerLaunch: 2_500_000_000n, maxLamportsPerDay: null, maxLaunchesPerDay: 0, lowBalanceLamports: 1n });
    expect(after.address).toBe(row.address);

    // With no limit named it only shows them.
    const shown = keys('limits', '--owner', 'acme');
    expect(shown.status).toBe(0);
    expect(shown.stdout).toBe(cleared.stdout);
    // Above 2^53 lamports, exactly (a JS number would make it …992).
    const exact = keys('limits', '--owner', 'acme', '--max-sol-per-launch', '9007199.254740993');
    expect(exact.status, exact.stderr).toBe(0);
    expect(exact.stdout).toContain('max-sol-per-launch\t9007199.254740993\n');
    await close();
  }, 180_000);

  it('refuses bad amounts, a bad owner and an unknown option with a clear message, changing nothing', async () => {
    const cases: Array<[string[], string]> = [
      [['--owner', 'acme', '--max-sol-per-launch', '1.0000000001'], '--max-sol-per-launch must be an amount of SOL'],
      [['--owner', 'acme', '--max-sol-per-day=-1'], '--max-sol-per-day must be an amount of SOL'],
      [['--owner', 'acme', '--max-launches-per-day', '2.5'], '--max-launches-per-day must be a whole number'],
      [['--max-sol-per-launch', '1'], '--owner is required'],
      [['--owner', 'nobody'], 'nobody has no funding wallet yet'],
      [['--owner', 'nobody', '--max-sol-per-launch', '1'], 'No owner "nobody": it has no API key and no funding wallet'],
      [['--owner', 'acme', '--max-sol', '1'], "Unknown option '--max-sol'"],
    ];
    for (const [args, message] of cases) {
      const run = keys('limits', ...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
    const { db, close } = openDatabase(join(dir, 'launch-service.sqlite'));
    expect((await db.selectFrom('funding_wallets').select('owner').execute()).map((r) => r.owner)).toEqual(['acme']);
    await close();
  }, 180_000);
});

describe('npm run keys -- bounds', () => {
  it('sets an owner’s overrides, clears one with default, keeps the others, prints the bounds that hold, and refuses bad values writing nothing', async () => {
    const env = { MAX_ENDPOINTS_PER_OWNER: '20' };
    const set = keysWith(env, 'bounds', '--owner', 'acme', '--endpoints', '25', '--redeliveries', '0');
    expect(set.status, set.stderr).toBe(0);
    expect(set.stdout).toBe('owner\tacme\nendpoints\t25\nlaunches-in-flight\t50 (default)\nredeliveries\t0\n');
    const { db, close } = openDatabase(join(dir, 'launch-service.sqlite'));
    expect(await readBoundOverrides(db, 'acme')).toEqual({ endpoints: 25, launchesInFlight: null, redeliveries: 0 });

    const cleared = keysWith(env, 'bounds', '--owner', 'acme', '--endpoints', 'default');
    expect(cleared.stdout).toBe('owner\tacme\nendpoints\t20 (default)\nlaunches-in-flight\t50 (default)\nredeliveries\t0\n');
    expect(keysWith(env, 'bounds', '--owner', 'acme').stdout).toBe(cleared.stdout);

    for (const [args, message] of [
      [['--owner', 'acme', '--endpoints=-1'], '--endpoints must be a whole number from 0 to 100000'],
      [['--owner', 'acme', '--launches-in-flight', '1000001'], '--launches-in-flight must be a whole number from 0 to 1000000'],
      [['--owner', 'acme', '--redeliveries', '2.5'], '--redeliveries must be a whole number'],
      [['--endpoints', '5'], '--owner is required'],
    ] as Array<[string[], string]>) {
      const run = keysWith(env, 'bounds', ...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.stderr).toContain(message);
    }
    expect(await readBoundOverrides(db, 'acme')).toEqual({ endpoints: null, launchesInFlight: null, redeliveries: 0 });
    await close();
  }, 180_000);
});
