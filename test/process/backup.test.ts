import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PublicKey } from '@solana/web3.js';
import { getAccount, getAssociatedTokenAddressSync, getMint, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { loadConfig } from '../../src/config/config.js';
import { backupSqliteDatabase } from '../../src/db/backup.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createChainBackend } from '../../src/app/serviceChain.js';
import { launchBody } from '../support/fixtures.js';
import { startChildService } from '../reliability/support/childService.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const LAUNCHES = 8;
// The restored service's clock is 10 minutes on: the leases the first process held in the copy have expired.
const OFFSET_MS = 10 * 60_000;

const root = mkdtempSync(join(tmpdir(), 'backup-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const secretKey = randomBytes(32).toString('base64');
const envFor = (dir: string) => ({
  DATA_DIR: dir, SECRET_KEY: secretKey, LOG_LEVEL: 'silent', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off', RATE_LIMIT_PER_MINUTE: '1000000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  // Without TEST_DATABASE_URL leaking in: the backup is of the SQLite file.
  DATABASE_URL: '',
});

const backup = (dir: string, file: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'scripts/backup.ts', file], { cwd: repoRoot, env: { ...process.env, ...envFor(dir) }, encoding: 'utf8' });

async function until(what: string, done: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  // The work happens in another process: poll its database.
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const statuses = async (db: Db) => db.selectFrom('launches').select(['id', 'status', 'results']).execute();

describe('npm run backup', () => {
  it('copies a running service; a service started on the copy finishes the launches in flight at the copy, minting each once', async () => {
    const first = join(root, 'first');
    const second = join(root, 'second');
    mkdirSync(first);
    mkdirSync(second);
    const config = loadConfig(envFor(first));
    const opened = openDatabase(config.databasePath);
    await migrateToLatest(opened.db);
    const key = (await createApiKey(opened.db, { owner: 'ops', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    const accepted: Array<{ id: string; body: Record<string, unknown> }> = [];
    const copy = join(root, 'copy.sqlite');
    const svc = await startChildService(envFor(first));
    try {
      for (let i = 0; i < LAUNCHES; i += 1) {
        const body = launchBody({ webhookUrl: 'http://127.0.0.1:9/hooks', totalSupply: String(1000 + i), decimals: i % 7 });
        const res = await request(`${svc.origin}/api/launches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.statusCode).toBe(202);
        accepted.push({ id: ((await res.body.json()) as { launch: { id: string } }).launch.id, body });
      }
      // Mid-way: some launches done, the others queued or running. The CLI's function, called from
      // here so the copy lands while launches are in flight (the CLI itself takes a second to start).
      await until('a first complete launch', async () => (await statuses(opened.db)).some((l) => l.status === 'complete'));
      expect(backupSqliteDatabase(config.databasePath, copy).bytes).toBeGreaterThan(0);
    } finally {
      // The service dies with the copy taken: nothing after it reaches the copy.
      await svc.kill('SIGKILL');
    }
    await opened.close();

    const restored = join(second, 'launch-service.sqlite');
    copyFileSync(copy, restored);
    const db = openDatabase(restored);
    const atCopy = await statuses(db.db);
    expect(atCopy.map((l) => l.id).sort()).toEqual(accepted.map((a) => a.id).sort());
    // The copy caught launches in flight (else this test shows nothing).
    expect(atCopy.filter((l) => l.status !== 'complete').length).toBeGreaterThan(0);

    const again = await startChildService({ ...envFor(second), CLOCK_OFFSET_MS: String(OFFSET_MS) });
    try {
      await until('every launch complete on the restored copy', async () => (await statuses(db.db)).every((l) => l.status === 'complete'), 120_000);
    } finally {
      expect(await again.kill('SIGTERM')).toBe(0);
    }

    // Each launch completed once, with one mint holding exactly its supply: a second mint-to would have doubled it.
    const launches = await statuses(db.db);
    const completeEvents = await db.db.selectFrom('outbox_events').select('launch_id').where('event', '=', 'launch.complete').execute();
    const chain = await createChainBackend(loadConfig(envFor(second)), { db: db.db, clock: { now: () => Date.now() + OFFSET_MS }, logger: silentLogger() });
    const conn = { getAccountInfo: (pk: PublicKey) => chain.getAccountInfo(pk) } as never;
    try {
      for (const a of accepted) {
        expect(completeEvents.filter((e) => e.launch_id === a.id)).toHaveLength(1);
        const mint = new PublicKey((JSON.parse(launches.find((l) => l.id === a.id)!.results) as { mint: string }).mint);
        const supply = BigInt(a.body.totalSupply as string) * 10n ** BigInt(a.body.decimals as number);
        expect((await getMint(conn, mint, 'confirmed', TOKEN_2022_PROGRAM_ID)).supply).toBe(supply);
        const ata = getAssociatedTokenAddressSync(mint, new PublicKey(a.body.creator as string), false, TOKEN_2022_PROGRAM_ID);
        expect((await getAccount(conn, ata, 'confirmed', TOKEN_2022_PROGRAM_ID)).amount).toBe(supply);
      }
    } finally {
      await chain.close();
      await db.close();
    }
  }, 180_000);

  it('runs as npm run backup: copies DATA_DIR\'s database, refuses an existing target and a PostgreSQL DATABASE_URL, saying what to do', async () => {
    const dir = join(root, 'cli');
    mkdirSync(dir);
    const opened = openDatabase(loadConfig(envFor(dir)).databasePath);
    await migrateToLatest(opened.db);
    await createApiKey(opened.db, { owner: 'ops', scopes: ['admin'], now: Date.now() });
    const target = join(root, 'cli-copy.sqlite');
    const result = backup(dir, target);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^backed up .* \(\d+ bytes in \d+ ms\)\n$/);
    await opened.close();
    const copied = openDatabase(target);
    expect(await copied.db.selectFrom('api_keys').select('owner').execute()).toEqual([{ owner: 'ops' }]);
    await copied.close();

    const taken = join(root, 'taken.sqlite');
    copyFileSync(fileURLToPath(import.meta.url), taken);
    const exists = backup(dir, taken);
    expect(exists.status).toBe(1);
    expect(exists.stderr).toMatch(/exists; choose a new file/);
    const pg = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/backup.ts', join(root, 'pg.sqlite')], {
      cwd: repoRoot,
      env: { ...process.env, ...envFor(dir), DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      encoding: 'utf8',
    });
    expect(pg.status).toBe(2);
    expect(pg.stderr).toMatch(/pg_dump/);
    expect(existsSync(join(root, 'pg.sqlite'))).toBe(false);
  });
});
