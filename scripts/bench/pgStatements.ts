/**
 * What the database does per delivery, ours beside the peer's: one drain of the `postgres` scenario
 * (`ours`: one dispatcher instance; `peer`: graphile-worker tuned at c = 32), then, before its fresh
 * database is dropped, that database's statements from pg_stat_statements (calls, execution time,
 * buffers dirtied, WAL) and its tables' inserts, updates, HOT updates and deletes. The server must
 * preload pg_stat_statements (`shared_preload_libraries`); the extension is created in the bench database.
 *
 *   BENCH_DATABASE_URL=postgres://… npx tsx scripts/bench/pgStatements.ts ours|peer [count]
 */
import pg from 'pg';
import { benchDatabaseUrl, measurePeer, measurePostgresDispatch } from './postgres.js';

async function inspect(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('create extension if not exists pg_stat_statements');
    const tables = await client.query(
      `select relname as table, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot, n_tup_del as del
       from pg_stat_user_tables where n_tup_ins + n_tup_upd + n_tup_del > 0 order by relname`,
    );
    console.table(tables.rows);
    // Everything this fresh database ran (its migrations too), the costliest first.
    const statements = await client.query(
      `select calls, round(total_exec_time::numeric, 1) as ms, shared_blks_dirtied as dirtied, wal_records, wal_bytes, rows,
         left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as statement
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
       order by total_exec_time desc limit 12`,
    );
    console.table(statements.rows);
  } finally {
    await client.end();
  }
}

if (!benchDatabaseUrl) throw new Error('set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL server');
const count = Number(process.argv[3] ?? 3000);
const drain = process.argv[2] === 'peer' ? await measurePeer(32, count, 10_000, true, inspect) : await measurePostgresDispatch(1, count, 10_000, inspect);
console.log(`${drain.perSecond.toFixed(0)} deliveries/s, CPU per delivery ${drain.serviceCpuMs.toFixed(2)} service + ${drain.databaseCpuMs?.toFixed(2) ?? '?'} database ms`);
