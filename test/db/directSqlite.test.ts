import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledQuery } from '../../src/db/compiledQuery.js';
import { openDatabase, type OpenedDatabase, type Tx } from '../../src/db/database.js';
import { execSql } from '../../src/db/sqlText.js';
import { holdWriteLock } from '../../src/db/writeLock.js';

const dir = mkdtempSync(join(tmpdir(), 'launch-direct-'));
let opened: OpenedDatabase;

beforeAll(async () => {
  opened = openDatabase(join(dir, 'direct.sqlite'));
  await sql`create table items (id text primary key, n integer not null)`.execute(opened.db);
});
afterAll(async () => {
  await opened.close();
  rmSync(dir, { recursive: true, force: true });
});

const raw = (text: string) => opened.sqlite.prepare(text);
const count = (id: string) => (raw('select count(*) as n from items where id = ?').get(id) as { n: number }).n;
/** Which settles first: the statement's promise, or one that was resolved before it was asked. */
const RIVAL = Symbol('rival');
const firstSettled = async (statement: Promise<unknown>) => ((await Promise.race([statement, Promise.resolve(RIVAL)])) === RIVAL ? 'rival' : 'statement');
const bumpStatement = compiledQuery<{ id: string }, { n: number }>((d, p) => d.updateTable('items').set((eb) => ({ n: eb('n', '+', 1) })).where('id', '=', p.id).returning('n'));

describe('statements run on the SQLite connection directly (directSqlite.ts)', () => {
  it('answers an execSql or compiled statement of a transaction at once, without kysely’s executor', async () => {
    await opened.db
      .transaction()
      .execute(async (trx) => {
        const inserted = execSql(trx, 'insert into items (id, n) values (?, ?)', ['a', 1]);
        // Already settled: through kysely's executor (connection provider, plugin pass) the promise
        // settles several microtasks later, after an already-resolved rival.
        expect(await firstSettled(inserted)).toBe('statement');
        expect(count('a')).toBe(1);
        const bumped = bumpStatement.execute(trx, { id: 'a' });
        expect(await firstSettled(bumped)).toBe('statement');
        expect((await bumped).rows).toEqual([{ n: 2 }]);
        // Outside the direct path (a plugin on the database), the same statement goes through kysely.
        const viaKysely = execSql(trx.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result }), 'select n from items where id = ?', ['a']);
        expect(await firstSettled(viaKysely)).toBe('rival');
        expect((await viaKysely).rows).toEqual([{ n: 2 }]);
      });
    expect(count('a')).toBe(1);
  });

  it('gives the same results as kysely: rows of a reader, changed rows and insert id of a write', async () => {
    const viaKysely = await opened.db.executeQuery(CompiledQuery.raw('insert into items (id, n) values (?, ?)', ['k', 5]));
    const direct = await opened.db
      .transaction()
      .execute((trx) => execSql(trx, 'insert into items (id, n) values (?, ?)', ['d', 5]));
    expect(Object.keys(direct).sort()).toEqual(Object.keys(viaKysely).sort());
    expect(direct.numAffectedRows).toBe(1n);
    expect(typeof direct.insertId).toBe('bigint');
    const rows = await opened.db
      .transaction()
      .execute((trx) => execSql<{ id: string; n: number }>(trx, 'update items set n = n + 1 where id in (?, ?) returning id, n', ['k', 'd']));
    expect(rows.rows.sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      { id: 'd', n: 6 },
      { id: 'k', n: 6 },
    ]);
  });

  it('rolls back with the transaction, and a failing statement rejects with SQLite’s error', async () => {
    const failed = opened.db
      .transaction()
      .execute(async (trx) => {
        await execSql(trx, 'insert into items (id, n) values (?, ?)', ['rolled', 1]);
        await execSql(trx, 'insert into items (id, n) values (?, ?)', ['rolled', 2]);
      });
    await expect(failed).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(count('rolled')).toBe(0);
    expect(opened.sqlite.inTransaction).toBe(false);
  });

  it('leaves a statement outside a transaction to kysely, which keeps it out of another open transaction', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let begun!: () => void;
    const open = new Promise<void>((resolve) => (begun = resolve));
    const rolledBack = opened.db
      .transaction()
      .execute(async (trx) => {
        await execSql(trx, 'insert into items (id, n) values (?, ?)', ['inside', 1]);
        begun();
        await held;
        throw new Error('roll back');
      });
    await open;
    // Run directly, this insert would land in the open transaction and be rolled back with it.
    const outside = execSql(opened.db, 'insert into items (id, n) values (?, ?)', ['outside', 1]);
    expect(count('outside')).toBe(0);
    release();
    await expect(rolledBack).rejects.toThrow('roll back');
    await outside;
    expect(count('inside')).toBe(0);
    expect(count('outside')).toBe(1);
  });

  it('runs a statement outside a transaction at once while no transaction is open, and it autocommits', async () => {
    expect(opened.sqlite.inTransaction).toBe(false);
    const inserted = execSql(opened.db, 'insert into items (id, n) values (?, ?)', ['free', 1]);
    expect(await firstSettled(inserted)).toBe('statement');
    expect(count('free')).toBe(1);
    const bumped = bumpStatement.execute(opened.db, { id: 'free' });
    expect(await firstSettled(bumped)).toBe('statement');
    expect((await bumped).rows).toEqual([{ n: 2 }]);
    await expect(execSql(opened.db, 'insert into items (id, n) values (?, ?)', ['free', 3])).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(opened.sqlite.inTransaction).toBe(false);
  });

  it('refuses a transaction used after its commit, as kysely does', async () => {
    let stale: Tx | undefined;
    await opened.db
      .transaction()
      .execute(async (trx) => {
        stale = trx;
        await execSql(trx, 'select 1', []);
      });
    // (kysely throws at the call, before any promise.)
    await expect((async () => execSql(stale!, 'insert into items (id, n) values (?, ?)', ['late', 1]))()).rejects.toThrow('Transaction is already committed');
    expect(count('late')).toBe(0);
  });
});

describe('with the chain thread sharing the file (the write lock, writeLock.ts)', () => {
  it('waits for the chain thread’s commit outside a transaction, as kysely’s driver does, then runs', async () => {
    const ldir = mkdtempSync(join(tmpdir(), 'launch-direct-lock-'));
    const locked = openDatabase(join(ldir, 'direct.sqlite'));
    try {
      await sql`create table items (id text primary key, n integer not null)`.execute(locked.db);
      const { buffer } = locked.shareWriteLock();
      // Free: at once, and the lock is free again after it.
      const free = execSql(locked.db, 'insert into items (id, n) values (?, ?)', ['free', 1]);
      expect(await firstSettled(free)).toBe('statement');
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let taken!: () => void;
      const isTaken = new Promise<void>((resolve) => (taken = resolve));
      // This thread plays the chain thread (the same shared cells; the side a commit of the chain's state takes).
      const chainCommit = holdWriteLock(buffer, async () => {
        taken();
        await held;
      });
      await isTaken;
      const waiting = execSql(locked.db, 'insert into items (id, n) values (?, ?)', ['after', 1]);
      // Run directly, it would write while the chain thread commits (SQLite's busy handler would then
      // sleep on the event loop).
      expect(await firstSettled(waiting)).toBe('rival');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(locked.sqlite.prepare('select count(*) as n from items where id = ?').get('after')).toEqual({ n: 0 });
      release();
      await chainCommit;
      await waiting;
      expect(locked.sqlite.prepare('select count(*) as n from items where id = ?').get('after')).toEqual({ n: 1 });
    } finally {
      await locked.close();
      rmSync(ldir, { recursive: true, force: true });
    }
  });
});
