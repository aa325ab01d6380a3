import { createHash } from 'node:crypto';
import { CompiledQuery, type QueryResult } from 'kysely';
import type { DbOrTx } from './database.js';
import { isPostgres } from './dialect.js';
import { runInSqliteTransaction } from './directSqlite.js';

/** PostgreSQL forms of the texts seen so far (`?` → `$1`, `$2`, …), derived once per text. */
const pgTexts = new Map<string, string>();
/** PostgreSQL text → its prepared statement's name (a hash of the text, so a name never means two texts). */
const preparedNames = new Map<string, string>();

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
 * set of distinct texts small (build them per statement shape, not per value): on PostgreSQL each
 * text is a named prepared statement on every connection that runs it ({@link preparePostgresStatements}).
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
    if (preparedNames.size >= 1_000) preparedNames.clear();
    preparedNames.set(out, `tls_${createHash('sha1').update(out).digest('base64url')}`);
  }
  return out;
}

interface QueryingClient {
  query: (...args: never[]) => unknown;
}

/**
 * Makes `client` (a pooled node-postgres connection, before first use) run the statements
 * {@link execSql} sends as named prepared statements: parsed and planned once per connection
 * instead of on every call (the dispatcher's claim and settle run thousands of times a second).
 * Every other statement (kysely's query builder, migrations) goes through untouched.
 */
export function preparePostgresStatements(client: QueryingClient): void {
  const query = client.query.bind(client) as (config: unknown, values?: unknown, callback?: unknown) => unknown;
  const named = (config: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof config === 'string' && callback === undefined && Array.isArray(values) ? preparedNames.get(config) : undefined;
    return name === undefined ? query(config, values, callback) : query({ name, text: config, values });
  };
  client.query = named as QueryingClient['query'];
}
