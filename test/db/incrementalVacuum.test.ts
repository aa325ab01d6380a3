import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { manualClock } from '../../src/lib/clock.js';
import { captureLogger } from '../support/webhooks.js';
import { startTestService, type TestService } from '../support/service.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const DAY = 86_400_000;

const pragma = async (db: Db, name: string) => Number(Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as Record<string, unknown>)[0]);

/** A complete launch with `count` delivered events of about 2 KB each, their deliveries and attempts, all at `at`. */
async function settledEvents(db: Db, count: number, at: number): Promise<void> {
  const launchId = `lch_${randomBytes(6).toString('hex')}`;
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('launches')
      .values({ id: launchId, owner: 'acme', status: 'complete', request: '{}', webhook_url: 'http://127.0.0.1:9/h', webhook_secret_enc: 'x', error: null, request_id: null, lease_owner: null, lease_expires_at: null, created_at: at, updated_at: at, started_at: at, completed_at: at })
      .execute();
    for (let i = 0; i < count; i += 1) {
      const eventId = `evt_${launchId}_${i}`;
      const deliveryId = `dlv_${launchId}_${i}`;
      await trx.insertInto('outbox_events').values({ id: eventId, launch_id: launchId, sequence: i + 1, event: 'launch.step_complete', body: randomBytes(1000).toString('hex'), request_id: null, created_at: at }).execute();
      await trx
        .insertInto('deliveries')
        .values({ id: deliveryId, event_id: eventId, launch_id: launchId, url: 'http://127.0.0.1:9/h', host: '127.0.0.1:9', endpoint: 'http://127.0.0.1:9/h', status: 'delivered', next_attempt_at: at, lease_owner: null, lease_expires_at: null, last_error: null, last_status_code: 200, created_at: at, updated_at: at, completed_at: at })
        .execute();
      await trx
        .insertInto('delivery_attempts')
        .values({ id: `att_${launchId}_${i}`, delivery_id: deliveryId, attempt: 1, started_at: at, duration_ms: 5, status_code: 200, outcome: 'success', error_class: null, error_message: null, response_body: null })
        .execute();
    }
  });
}

/**
 * The file's size once its WAL is written back (what a checkpoint leaves on disk). The service's
 * checkpointer thread may be mid-checkpoint: then this one reports busy, and is tried again.
 */
async function fileSize(db: Db, path: string): Promise<number> {
  for (let tries = 0; tries < 100; tries += 1) {
    const [row] = (await sql<{ busy: number }>`pragma wal_checkpoint(TRUNCATE)`.execute(db)).rows;
    if (row?.busy === 0) return statSync(path).size;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the WAL could not be checkpointed');
}

describe('SQLite gives the space retention frees back', () => {
  let t: TestService | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('a new database file shrinks after retention deletes, a bounded number of pages per round', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    t = await startTestService({ clock });
    const db = t.service.db;
    expect(await pragma(db, 'auto_vacuum')).toBe(2); // INCREMENTAL
    await settledEvents(db, 3000, clock.now());
    const full = await fileSize(db, t.config.databasePath);
    expect(full).toBeGreaterThan(6_000_000);

    clock.advance(31 * DAY);
    const steps: number[] = [];
    for (let round = 0; round < 1000; round += 1) {
      const { freedPages, more } = await t.service.retention.runOnce();
      steps.push(freedPages);
      if (!more) break;
    }
    expect(await pragma(db, 'freelist_count')).toBeLessThan(128);
    // Each round gives back at most one step's worth (128 pages): the write lock is never held long.
    expect(Math.max(...steps)).toBeLessThanOrEqual(128);
    expect(steps.filter((n) => n > 0).length).toBeGreaterThan(10);
    const after = await fileSize(db, t.config.databasePath);
    expect(after).toBeLessThan(full / 5);
    expect(Number((await db.selectFrom('outbox_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)).toBe(0);
  });

  it('a file made with auto_vacuum NONE keeps working and says how to switch; npm run vacuum switches it, rows kept, and refuses while the service runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vacuum-'));
    dirs.push(dir);
    const env = { DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', DATABASE_URL: '' };
    const path = join(dir, 'launch-service.sqlite');
    const legacy = new SqliteDatabase(path);
    legacy.exec('create table made_before (x integer); insert into made_before values (42)');
    legacy.close();

    const clock = manualClock(Date.UTC(2026, 0, 1));
    const { logger, lines } = captureLogger();
    t = await startTestService({ clock, logger, env });
    expect(t.config.databasePath).toBe(path);
    const db = t.service.db;
    expect(await pragma(db, 'auto_vacuum')).toBe(0);
    expect(lines.some((line) => line.includes('auto_vacuum NONE') && line.includes('npm run vacuum'))).toBe(true);
    await settledEvents(db, 300, clock.now());
    clock.advance(31 * DAY);
    // Retention works as before; the freed pages stay in the file for the next rows.
    expect(await t.service.retention.runOnce()).toMatchObject({ deleted: { events: 200 }, freedPages: 0, more: true });
    expect(await t.service.retention.drain()).toMatchObject({ events: 100 });
    expect(await pragma(db, 'freelist_count')).toBeGreaterThan(128);

    const vacuum = () => spawnSync(process.execPath, ['--import', 'tsx', 'scripts/vacuum.ts'], { cwd: repoRoot, env: { ...process.env, ...env }, encoding: 'utf8' });
    const refused = vacuum();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('writer lock');
    await t.close();
    t = undefined;

    const switched = vacuum();
    expect(switched.stderr).toBe('');
    expect(switched.status).toBe(0);
    expect(switched.stdout).toContain('auto_vacuum INCREMENTAL');
    const reopened = new SqliteDatabase(path, { fileMustExist: true });
    try {
      expect(reopened.pragma('auto_vacuum', { simple: true })).toBe(2);
      expect(reopened.pragma('freelist_count', { simple: true })).toBe(0);
      expect(reopened.prepare('select x from made_before').pluck().get()).toBe(42);
      expect(reopened.prepare('select count(*) from launches').pluck().get()).toBe(1);
    } finally {
      reopened.close();
    }
    expect(vacuum().stdout).toContain('nothing to do');
  });

  it('a file made with auto_vacuum FULL is named FULL at start, not NONE, and npm run vacuum switches it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vacuum-'));
    dirs.push(dir);
    const env = { DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', DATABASE_URL: '' };
    const path = join(dir, 'launch-service.sqlite');
    const legacy = new SqliteDatabase(path);
    legacy.pragma('auto_vacuum = FULL');
    legacy.exec('create table made_before (x integer); insert into made_before values (42)');
    legacy.close();

    const { logger, lines } = captureLogger();
    t = await startTestService({ logger, env });
    expect(await pragma(t.service.db, 'auto_vacuum')).toBe(1);
    const said = lines.filter((line) => line.includes('auto_vacuum'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('auto_vacuum FULL');
    expect(said[0]).not.toContain('NONE');
    expect(said[0]).toContain('npm run vacuum');
    await t.close();
    t = undefined;

    const switched = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/vacuum.ts'], { cwd: repoRoot, env: { ...process.env, ...env }, encoding: 'utf8' });
    expect(switched.stderr).toBe('');
    expect(switched.status).toBe(0);
    expect(switched.stdout).toContain('auto_vacuum INCREMENTAL (was FULL)');
    const reopened = new SqliteDatabase(path, { fileMustExist: true });
    try {
      expect(reopened.pragma('auto_vacuum', { simple: true })).toBe(2);
      expect(reopened.prepare('select x from made_before').pluck().get()).toBe(42);
    } finally {
      reopened.close();
    }
  });

  it('npm run vacuum refuses in one line and creates nothing where there is no database file; on PostgreSQL it has nothing to do', () => {
    const parent = mkdtempSync(join(tmpdir(), 'vacuum-'));
    dirs.push(parent);
    const missing = join(parent, 'mistyped');
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'scripts/vacuum.ts'], { cwd: repoRoot, env: { ...process.env, SECRET_KEY: '', LOG_LEVEL: 'silent', ...env }, encoding: 'utf8' });
    for (const dir of [missing, parent]) {
      const refused = run({ DATA_DIR: dir, DATABASE_URL: '' });
      expect(refused.status).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(`no database file at ${join(dir, 'launch-service.sqlite')}: check DATA_DIR (or DATABASE_URL); nothing was changed\n`);
    }
    // Neither the mistyped directory nor a lock file (nor a secret key) was made.
    expect(readdirSync(parent)).toEqual([]);

    const postgres = run({ DATA_DIR: missing, DATABASE_URL: 'postgres://launch@127.0.0.1:9/launch' });
    expect(postgres.stderr).toBe('');
    expect(postgres.status).toBe(0);
    expect(postgres.stdout).toBe('DATABASE_URL is PostgreSQL: nothing to do (its own autovacuum makes the space of deleted rows reusable; there is no auto_vacuum mode to switch)\n');
    expect(readdirSync(parent)).toEqual([]);
  });

  it('npm run vacuum while a backup holds a snapshot of the file says the WAL was not truncated and gives the file\'s and the WAL\'s sizes apart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vacuum-'));
    dirs.push(dir);
    const path = join(dir, 'launch-service.sqlite');
    const legacy = new SqliteDatabase(path);
    legacy.pragma('journal_mode = WAL');
    legacy.exec('create table made_before (x blob)');
    const insert = legacy.prepare('insert into made_before values (randomblob(1000))');
    legacy.transaction(() => {
      for (let i = 0; i < 2000; i += 1) insert.run();
    })();
    legacy.exec('delete from made_before where rowid % 2 = 0');
    legacy.close();
    const before = statSync(path).size;

    // npm run backup's VACUUM INTO reads the file in one read transaction for its whole copy: this one stays open.
    const backup = new SqliteDatabase(path);
    try {
      backup.exec('begin');
      expect(backup.prepare('select count(*) from made_before').pluck().get()).toBe(1000);
      const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/vacuum.ts'], { cwd: repoRoot, env: { ...process.env, DATA_DIR: dir, DATABASE_URL: '', LOG_LEVEL: 'silent' }, encoding: 'utf8' });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      const stdout = result.stdout;
      expect(stdout).toContain(`auto_vacuum INCREMENTAL (was NONE), ${before} bytes before; the WAL was not truncated (another connection, such as npm run backup, reads an older snapshot of the file)`);
      const sizes = /the database file is (\d+) bytes and its WAL (\d+) bytes/.exec(stdout);
      expect(Number(sizes?.[1])).toBe(statSync(path).size);
      expect(Number(sizes?.[2])).toBe(statSync(`${path}-wal`).size);
      expect(Number(sizes?.[2])).toBeGreaterThan(0);
      backup.exec('commit');
    } finally {
      backup.close();
    }
    // The backup gone, the switch is there and a checkpoint gives the file its new size.
    const reopened = new SqliteDatabase(path, { fileMustExist: true });
    try {
      expect(reopened.pragma('auto_vacuum', { simple: true })).toBe(2);
      expect(reopened.prepare('select count(*) from made_before').pluck().get()).toBe(1000);
      expect((reopened.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>)[0]?.busy).toBe(0);
      expect(statSync(path).size).toBeLessThan(before * 0.7);
    } finally {
      reopened.close();
    }
  });
});
