import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compiledQuery } from '../../src/db/compiledQuery.js';
import { createTestDb, type TestDb } from '../support/webhooks.js';

// Compiled hot statements (src/db/compiledQuery.ts) on both stores: with TEST_DATABASE_URL on PostgreSQL.
type Items = {
  items: { id: string; n: number; label: string | null };
};

describe('compiledQuery', () => {
  let t: TestDb;
  let db: Kysely<Items>;

  beforeEach(async () => {
    t = await createTestDb();
    db = t.db.withTables<Items>() as unknown as Kysely<Items>;
    await sql`create table items (id text primary key, n integer not null, label text)`.execute(db);
    await db.insertInto('items').values([{ id: 'a', n: 1, label: null }, { id: 'b', n: 2, label: null }, { id: 'c', n: 3, label: null }]).execute();
  });
  afterEach(async () => {
    await t.close();
  });

  it('runs each time with that run’s values, keeping the constants the query holds, in and outside a transaction', async () => {
    let builds = 0;
    const bump = compiledQuery<{ id: string; label: string; min: number }, { id: string; n: number }>((d: Kysely<Items>, p) => {
      builds += 1;
      return d
        .updateTable('items')
        .set((eb) => ({ n: eb('n', '+', 10), label: p.label }))
        .where('id', '=', p.id)
        .where('n', '>=', p.min)
        .returning(['id', 'n']);
    });
    expect(await bump.rows(db, { id: 'a', label: 'first', min: 0 })).toEqual([{ id: 'a', n: 11 }]);
    await db.transaction().execute(async (trx) => {
      expect(await bump.first(trx, { id: 'b', label: 'second', min: 0 })).toEqual({ id: 'b', n: 12 });
    });
    expect(await bump.first(db, { id: 'c', label: 'third', min: 100 })).toBeUndefined();
    expect(builds).toBe(1);
    expect(await db.selectFrom('items').select(['id', 'n', 'label']).orderBy('id').execute()).toEqual([
      { id: 'a', n: 11, label: 'first' },
      { id: 'b', n: 12, label: 'second' },
      { id: 'c', n: 3, label: null },
    ]);
  });

  it('fills every place a parameter is used, counts changed rows, and compiles a list once per length (shape)', async () => {
    const relabel = compiledQuery<Record<string, string>>((d: Kysely<Items>, p, shape) =>
      d
        .updateTable('items')
        .set({ label: p.label })
        .where((eb) => eb.or([eb('id', 'in', Array.from({ length: Number(shape) }, (_, i) => p[`id${i}`]!)), eb('label', '=', p.label!)])),
    );
    expect(await relabel.changed(db, { label: 'x', id0: 'a' }, 1)).toBe(1);
    expect(await relabel.changed(db, { label: 'x', id0: 'b', id1: 'c' }, 2)).toBe(3); // b, c and a (already labelled x)
    expect(await relabel.changed(db, { label: 'y', id0: 'zzz' }, 1)).toBe(0);
  });

  it('refuses a parameter inlined into the SQL text and a run without a value', async () => {
    const inlined = compiledQuery<{ id: string }>((d: Kysely<Items>, p) => d.selectFrom('items').selectAll().where('id', '=', sql.lit(p.id)));
    await expect(inlined.rows(db, { id: 'a' })).rejects.toThrow(/inlined/);
    const missing = compiledQuery<{ id: string }>((d: Kysely<Items>, p) => d.selectFrom('items').selectAll().where('id', '=', p.id));
    await expect(missing.rows(db, {} as { id: string })).rejects.toThrow(/no value for parameter id/);
  });
});
