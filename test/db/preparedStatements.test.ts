import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/database.js';
import { execSql } from '../../src/db/sqlText.js';
import { createPostgresDatabase, onPostgres } from '../support/database.js';

// PostgreSQL only: the statements execSql sends are named prepared statements on each connection.
describe.skipIf(!onPostgres)('hot statements on PostgreSQL', () => {
  it('are prepared once per connection and run again with each call’s values; other statements are not prepared', async () => {
    const database = await createPostgresDatabase();
    const { db, close } = openPostgres(database.url, { poolSize: 1 });
    try {
      await sql`create table items (id text primary key, n integer not null)`.execute(db);
      await sql`insert into items values ('a', 1), ('b', 2)`.execute(db);
      const text = 'select n from items where id = ?';
      expect((await execSql<{ n: number }>(db, text, ['a'])).rows).toEqual([{ n: 1 }]);
      expect((await execSql<{ n: number }>(db, text, ['b'])).rows).toEqual([{ n: 2 }]);
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
      expect(prepared.rows.map((r) => r.statement)).toEqual(['select n from items where id = $1']);
    } finally {
      await close();
      await database.drop();
    }
  });

  it('run without JIT compilation: a plan estimated past jit_above_cost is not compiled', async () => {
    const database = await createPostgresDatabase();
    const { db, close } = openPostgres(database.url, { poolSize: 1 });
    try {
      expect((await sql<{ jit: string }>`show jit`.execute(db)).rows[0]?.jit).toBe('off');
      // Guessed at a hundred million rows, as a table not yet analyzed can be; it returns one.
      await sql`create function guessed_big() returns setof integer language sql rows 100000000 as 'select 1'`.execute(db);
      const { rows } = await execSql<{ 'QUERY PLAN': Array<Record<string, unknown>> }>(db, 'explain (analyze, format json) select sum(x) + ? from guessed_big() x', [1]);
      const plan = rows[0]!['QUERY PLAN'][0]!;
      expect((plan.Plan as { 'Total Cost': number })['Total Cost']).toBeGreaterThan(100_000); // jit_above_cost's default
      expect(plan.JIT).toBeUndefined();
    } finally {
      await close();
      await database.drop();
    }
  });

  it('parse a text[] column repeated on every row once, each row still getting an array of its own with every element as stored', async () => {
    const database = await createPostgresDatabase();
    const { db, close } = openPostgres(database.url, { poolSize: 1 });
    try {
      const text = `select array['a', 'b,c', 'd"e', 'f\\g', null, '']::text[] as same, array[g::text]::text[] as own from generate_series(1, 3) g where g <= ? order by g`;
      const { rows } = await execSql<{ same: Array<string | null>; own: string[] }>(db, text, [3]);
      expect(rows.map((r) => r.own)).toEqual([['1'], ['2'], ['3']]);
      for (const row of rows) expect(row.same).toEqual(['a', 'b,c', 'd"e', 'f\\g', null, '']);
      rows[0]!.same.push('changed'); // one row's array is its own
      expect(rows[1]!.same).toEqual(['a', 'b,c', 'd"e', 'f\\g', null, '']);
      expect((await sql<{ a: string[] | null }>`select null::text[] as a`.execute(db)).rows).toEqual([{ a: null }]);
    } finally {
      await close();
      await database.drop();
    }
  });

  it('send array parameters and read text[] columns back exactly, whatever the elements hold', async () => {
    const database = await createPostgresDatabase();
    const { db, close } = openPostgres(database.url, { poolSize: 1 });
    try {
      const texts = ['a', 'b"c', 'd\\e', null, '', 'NULL', 'null', 'x y', '{z}', 'p,q', 'ü'];
      const { rows } = await execSql<{ t: Array<string | null>; n: Array<number | null>; b: number[]; e: string[]; len: number }>(
        db,
        'select ?::text[] as t, ?::integer[] as n, ?::bigint[] as b, ?::text[] as e, cardinality(?::text[]) as len',
        [texts, [1, null, -3], [2 ** 40, 0], [], texts],
      );
      expect(rows).toEqual([{ t: texts, n: [1, null, -3], b: ['1099511627776', '0'], e: [], len: texts.length }]);
    } finally {
      await close();
      await database.drop();
    }
  });

  it('run on a pooled connection outside a transaction and on the transaction’s own inside one, counting changed rows either way', async () => {
    const database = await createPostgresDatabase();
    const { db, close } = openPostgres(database.url, { poolSize: 2 });
    try {
      await sql`create table items (id text primary key, n integer not null)`.execute(db);
      await sql`insert into items values ('a', 1), ('b', 2)`.execute(db);
      const bump = 'update items set n = n + ? where id in (?, ?)';
      expect((await execSql(db, bump, [10, 'a', 'b'])).numAffectedRows).toBe(2n);
      expect((await execSql(db, 'select n from items where id = ?', ['zzz'])).numAffectedRows).toBeUndefined();
      await expect(
        db.transaction().execute(async (trx) => {
          expect((await execSql(trx, bump, [100, 'a', 'x'])).numAffectedRows).toBe(1n);
          expect((await execSql<{ n: number }>(trx, 'select n from items where id = ?', ['a'])).rows).toEqual([{ n: 111 }]);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      const { rows } = await execSql<{ id: string; n: number }>(db, 'select id, n from items where n > ? order by id', [0]);
      expect(rows).toEqual([{ id: 'a', n: 11 }, { id: 'b', n: 12 }]);
    } finally {
      await close();
      await database.drop();
    }
  });
});
