import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase, openPostgres, type Db } from '../../src/db/database.js';

/**
 * Which database the suite runs on (docs/architecture.md, SQLite and PostgreSQL): SQLite files by default; with
 * `TEST_DATABASE_URL=postgres://…` (set by `.ci/run` and `npm test` when a server is available) every
 * test that uses the database through this folder runs on PostgreSQL, each in a database of its own
 * created fresh from that server and dropped after.
 */
export const testDatabaseUrl: string | undefined = process.env.TEST_DATABASE_URL && process.env.TEST_DATABASE_URL !== '' ? process.env.TEST_DATABASE_URL : undefined;

/** True when this run is the PostgreSQL half of the suite. */
export const onPostgres = testDatabaseUrl !== undefined;

/** A fresh, empty database on the test server: its URL, and `drop()` to remove it. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (testDatabaseUrl === undefined) throw new Error('TEST_DATABASE_URL is not set');
  const name = `t_${randomBytes(8).toString('hex')}`;
  await admin((client) => client.query(`create database ${name}`));
  const url = new URL(testDatabaseUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin((client) => client.query(`drop database if exists ${name} with (force)`)) };
}

async function admin(run: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** Opens a database by its location: a postgres:// URL, else a SQLite file path (for worker processes). */
export function openDatabaseAt(location: string): { db: Db; close(): Promise<void> } {
  return /^postgres(ql)?:\/\//i.test(location) ? openPostgres(location, { poolSize: 4 }) : openDatabase(location);
}

/**
 * Makes every insert into `table` fail like a full disk (optionally only rows whose `column` is
 * `value`): a trigger, in SQLite's or PostgreSQL's own syntax.
 */
export async function refuseInserts(db: Db, table: string, only?: { column: string; value: string }): Promise<void> {
  if (onPostgres) {
    const condition = only ? `new.${only.column} = '${only.value}'` : 'true';
    await sql.raw(`create function refuse_${table}() returns trigger language plpgsql as $$ begin if ${condition} then raise exception 'disk full'; end if; return new; end $$`).execute(db);
    await sql.raw(`create trigger refuse before insert on ${table} for each row execute function refuse_${table}()`).execute(db);
    return;
  }
  const when = only ? ` when new.${only.column} = '${only.value}'` : '';
  await sql.raw(`create trigger refuse before insert on ${table}${when} begin select raise(abort, 'disk full'); end`).execute(db);
}

/**
 * Lets `ms` of lease time pass: the test's clock advances, and on PostgreSQL — where leases run on
 * the database server's clock (docs/architecture.md, SQLite and PostgreSQL), which a test cannot jump — every live lease deadline
 * (launches, deliveries, watches) moves `ms` into the past instead, which is the same to a claim.
 */
export async function passLeaseTime(db: Db, clock: { advance(ms: number): void }, ms: number): Promise<void> {
  clock.advance(ms);
  if (!onPostgres) return;
  for (const table of ['launches', 'deliveries', 'watches']) {
    await sql`update ${sql.table(table)} set lease_expires_at = lease_expires_at - ${ms} where lease_owner is not null`.execute(db);
  }
}
