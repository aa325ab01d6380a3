import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundCheckpointer } from '../../src/db/checkpointer.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';

const dir = mkdtempSync(join(tmpdir(), 'launch-ckpt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function fill(path: string, options?: { backgroundCheckpoint?: boolean }) {
  const opened = openDatabase(path, options);
  await migrateToLatest(opened.db);
  await sql`create table filler (id integer primary key, pad text)`.execute(opened.db);
  for (let i = 0; i < 3000; i++) await sql`insert into filler (pad) values (${'x'.repeat(500)})`.execute(opened.db);
  return opened;
}

describe('WAL checkpoints off the event loop', () => {
  it('leaves automatic checkpoints off on the service connection and copies the WAL into the file from the worker', async () => {
    const path = join(dir, 'bg.sqlite');
    const opened = await fill(path);
    expect(opened.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const before = statSync(path).size;
    // The worker checkpoints every second: the main file grows while this thread only waits (page by
    // page, so wait for all of it rather than for the first page of it).
    // Polled up to 30 s: the worker's checkpoints are slow on a loaded CI machine; none at all still fails.
    await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(before + 1_000_000), { timeout: 30_000, interval: 100 });
    await opened.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reopened = openDatabase(path, { backgroundCheckpoint: false });
    expect((await sql<{ n: number }>`select count(*) as n from filler`.execute(reopened.db)).rows[0]?.n).toBe(3000);
    await reopened.close();
  });

  it('keeps SQLite automatic checkpoints when asked not to use the worker', async () => {
    const opened = await fill(join(dir, 'auto.sqlite'), { backgroundCheckpoint: false });
    expect(opened.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await opened.close();
  });
  it('replaces a checkpoint worker that died, and the new one checkpoints', async () => {
    const path = join(dir, 'restart.sqlite');
    const opened = openDatabase(path, { backgroundCheckpoint: false });
    await migrateToLatest(opened.db);
    opened.sqlite.pragma('wal_autocheckpoint = 0');
    const errors: string[] = [];
    const checkpointer = startBackgroundCheckpointer(path, { intervalMs: 50, restartDelayMs: 10, onError: (m) => errors.push(m) });
    const first = checkpointer.worker();
    await first.terminate(); // the worker dies
    await vi.waitFor(() => expect(checkpointer.restarts()).toBe(1), { timeout: 30_000 });
    expect(checkpointer.worker()).not.toBe(first);
    expect(errors.some((e) => e.includes('restarting'))).toBe(true);
    await sql`create table filler (id integer primary key, pad text)`.execute(opened.db);
    for (let i = 0; i < 2000; i++) await sql`insert into filler (pad) values (${'x'.repeat(500)})`.execute(opened.db);
    // 2000 rows of 500 bytes reach the main file only through a checkpoint (the automatic one is off).
    await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(1_000_000), { timeout: 30_000, interval: 50 });
    await checkpointer.stop();
    await opened.close();
  });
  it('bounds the WAL under a steady stream of writes: past the limit it is restarted while the database holds its queries', async () => {
    const path = join(dir, 'bounded.sqlite');
    const opened = openDatabase(path, { backgroundCheckpoint: false });
    await migrateToLatest(opened.db);
    opened.sqlite.pragma('wal_autocheckpoint = 0');
    const limitBytes = 256 * 4096;
    opened.sqlite.pragma(`journal_size_limit = ${limitBytes}`);
    await sql`create table filler (id integer primary key, pad text)`.execute(opened.db);
    const restarts: Array<{ frames: number; busy: boolean }> = [];
    const errors: string[] = [];
    let paused = 0;
    const checkpointer = startBackgroundCheckpointer(path, {
      intervalMs: 20,
      restartFrames: 256,
      pauseDatabase: (during) => opened.db.connection().execute(async () => {
        paused += 1;
        await during();
      }),
      onRestart: (info) => restarts.push(info),
      onError: (m) => errors.push(m),
    });
    // One small transaction after another, as the service's events and deliveries commit: a
    // PASSIVE checkpoint never finds the WAL idle, so without a restart it only grows.
    let written = 0;
    let largest = 0;
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      await opened.db.transaction().execute(async (trx) => {
        await sql`insert into filler (pad) values (${'x'.repeat(2000)})`.execute(trx);
        await sql`update filler set pad = ${'y'.repeat(2000)} where id = ${Math.max(1, written - 5)}`.execute(trx);
      });
      written += 1;
      await new Promise((resolve) => setImmediate(resolve)); // the service turns its event loop between commits
      if (written % 50 === 0) largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    await checkpointer.stop();
    expect(errors).toEqual([]);
    expect(restarts.filter((r) => !r.busy).length).toBeGreaterThan(0);
    expect(paused).toBeGreaterThan(0);
    // Each restart begins the WAL again and cuts the file back: it holds the limit plus what one
    // checkpoint interval adds (at most 8.3 MB here; without the restarts it reached 246 MB).
    expect(written).toBeGreaterThan(500);
    expect(largest).toBeLessThan(limitBytes * 32);
    expect(statSync(`${path}-wal`).size).toBeLessThan(limitBytes * 32);
    expect((await sql<{ n: number }>`select count(*) as n from filler`.execute(opened.db)).rows[0]?.n).toBe(written);
    await opened.close();
  });
  it('gives a restart up quickly while another connection reads an older snapshot, says so, and waits before the next', async () => {
    const path = join(dir, 'reader.sqlite');
    const opened = openDatabase(path, { backgroundCheckpoint: false });
    await migrateToLatest(opened.db);
    opened.sqlite.pragma('wal_autocheckpoint = 0');
    await sql`create table filler (id integer primary key, pad text)`.execute(opened.db);
    for (let i = 0; i < 50; i++) await sql`insert into filler (pad) values (${'x'.repeat(2000)})`.execute(opened.db);
    // Another process's reader (a backup, a replication tool) holds a snapshot of the WAL open.
    const reader = new Database(path);
    reader.exec('begin');
    expect(reader.prepare('select count(*) as n from filler').get()).toEqual({ n: 50 });
    for (let i = 0; i < 50; i++) await sql`insert into filler (pad) values (${'y'.repeat(2000)})`.execute(opened.db);
    const restarts: Array<{ frames: number; busy: boolean }> = [];
    const checkpointer = startBackgroundCheckpointer(path, {
      intervalMs: 20,
      restartFrames: 64,
      restartBackoffMs: 60_000,
      // A pause the restart's answer did not end would hold the write below for 60 s.
      pauseLimitMs: 60_000,
      pauseDatabase: (during) => opened.db.connection().execute(during),
      onRestart: (info) => restarts.push(info),
    });
    await vi.waitFor(() => expect(restarts).toHaveLength(1), { timeout: 30_000, interval: 20 });
    expect(restarts[0]!.busy).toBe(true);
    // The restart gave the write lock back and its answer ended the pause: a write goes through (a
    // lock kept would fail it with SQLITE_BUSY after 5 s, a pause kept would hold it 60 s; the 10 s
    // bound is far from both and from the fast path's milliseconds), and no other attempt follows
    // within the backoff (each would pause the database).
    const started = Date.now();
    await sql`insert into filler (pad) values ('after')`.execute(opened.db);
    expect(Date.now() - started).toBeLessThan(10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(restarts).toHaveLength(1);
    reader.exec('commit');
    reader.close();
    await checkpointer.stop();
    expect((await sql<{ n: number }>`select count(*) as n from filler`.execute(opened.db)).rows[0]?.n).toBe(101);
    await opened.close();
  });
});
