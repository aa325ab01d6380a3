import { CompiledQuery, type QueryResult } from 'kysely';
import type { DbOrTx } from './database.js';
import { isPostgres } from './dialect.js';
import { runDirectSqlite } from './directSqlite.js';
import { postgresText, runOnPool } from './pgStatements.js';

/**
 * Runs a hot statement given as SQL text with `?` placeholders and its parameters in order, without
 * building and compiling it through kysely's query builder on every call (the dispatcher's claim and
 * settle run thousands of times a second; building them was about a tenth of its process). The
 * statement still goes through the database's (or transaction's) executor, so it runs on the
 * transaction's connection, and on SQLite the prepared statement is reused by its text; on
 * SQLite it runs on the connection directly where it safely can (directSqlite.ts), and on PostgreSQL outside
 * a transaction on a pooled connection directly (runOnPool, pgStatements.ts).
 *
 * The text must be SQL both stores accept (dialect differences stay in `dialect.ts`), and a `?` may
 * appear in it only as a placeholder: no string literal or operator containing one. Callers keep the
 * set of distinct texts small (build them per statement shape, not per value): on PostgreSQL each
 * text is a named prepared statement on every connection that runs it (`preparePostgresStatements`, pgStatements.ts).
 */
export function execSql<R>(db: DbOrTx, text: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
  try {
    const direct = runDirectSqlite<R>(db, text, parameters);
    if (direct) return Promise.resolve(direct);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  if (!isPostgres(db)) return db.executeQuery<R>(CompiledQuery.raw(text, parameters as unknown[]));
  const pgText = postgresText(text);
  return (db.isTransaction ? undefined : runOnPool<R>(db, pgText, parameters)) ?? db.executeQuery<R>(CompiledQuery.raw(pgText, parameters as unknown[]));
}

/** `count` placeholders separated by commas, for an `in (…)` list. */
export function placeholders(count: number): string {
  return count <= 0 ? '' : '?' + ', ?'.repeat(count - 1);
}
