import { CompiledQuery, type QueryResult } from 'kysely';
import type { DbOrTx } from './database.js';
import { isPostgres } from './dialect.js';
import { runInSqliteTransaction } from './directSqlite.js';

/** PostgreSQL forms of the texts seen so far (`?` → `$1`, `$2`, …), derived once per text. */
const pgTexts = new Map<string, string>();

/**
 * Runs a hot statement given as SQL text with `?` placeholders and its parameters in order, without
 * building and compiling it through kysely's query builder on every call (the dispatcher's claim and
 * settle run thousands of times a second; building them was about a tenth of its process). The
 * statement still goes through the database's (or transaction's) executor, so it runs on the
 * transaction's connection, and on SQLite the prepared statement is reused by its text; inside a
 * SQLite transaction it runs on the connection directly (directSqlite.ts).
 *
 * The text must be SQL both stores accept (dialect differences stay in `dialect.ts`), and a `?` may
 * appear in it only as a placeholder: no string literal or operator containing one. Callers keep the
 * set of distinct texts small (build them per statement shape, not per value).
 */
export function execSql<R>(db: DbOrTx, text: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
  try {
    const direct = runInSqliteTransaction<R>(db, text, parameters);
    if (direct) return Promise.resolve(direct);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  return db.executeQuery<R>(CompiledQuery.raw(isPostgres(db) ? postgresText(text) : text, parameters as unknown[]));
}

/** `count` placeholders separated by commas, for an `in (…)` list. */
export function placeholders(count: number): string {
  return count <= 0 ? '' : '?' + ', ?'.repeat(count - 1);
}

function postgresText(text: string): string {
  let out = pgTexts.get(text);
  if (out === undefined) {
    let n = 0;
    out = text.replace(/\?/g, () => `$${++n}`);
    if (pgTexts.size >= 1_000) pgTexts.clear();
    pgTexts.set(text, out);
  }
  return out;
}
