import { createHash } from 'node:crypto';
import type { QueryResult } from 'kysely';
import { arrayLiteral } from './pgArrays.js';

/* PostgreSQL's side of execSql (sqlText.ts): placeholders numbered, and each text a named prepared statement per connection. */

/** PostgreSQL forms of the texts seen so far (`?` → `$1`, `$2`, …), derived once per text. */
const pgTexts = new Map<string, string>();
/** PostgreSQL text → its prepared statement's name (a hash of the text, so a name never means two texts). */
const preparedNames = new Map<string, string>();

/** The PostgreSQL form of an execSql text (`?` → `$1`, `$2`, …), derived once per text and named for preparing. */
export function postgresText(text: string): string {
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
 * `execSql` (sqlText.ts) sends as named prepared statements: parsed and planned once per connection
 * instead of on every call (the dispatcher's claim and settle run thousands of times a second),
 * their array parameters written as literals by arrayLiteral (pgArrays.ts). Every other statement (kysely's query builder, migrations) goes through untouched.
 */
export function preparePostgresStatements(client: QueryingClient): void {
  const query = client.query.bind(client) as (config: unknown, values?: unknown, callback?: unknown) => unknown;
  const named = (config: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof config === 'string' && callback === undefined && Array.isArray(values) ? preparedNames.get(config) : undefined;
    return name === undefined ? query(config, values, callback) : query({ name, text: config, values: (values as unknown[]).map(literalArrays) });
  };
  client.query = named as QueryingClient['query'];
}

/** An array parameter as its literal (pgArrays.ts; the claim and settle send about twenty arrays a turn), anything else as is. */
const literalArrays = (value: unknown) => (Array.isArray(value) ? (arrayLiteral(value) ?? value) : value);

/** The pool behind each PostgreSQL database openPostgres made (database.ts), for {@link runOnPool}. */
const pools = new WeakMap<object, PoolLike>();

interface PoolLike {
  connect(): Promise<{ query(text: string, values: unknown[]): Promise<{ command: string; rowCount: number | null; rows: unknown[] }>; release(): void }>;
}

/** Notes the pool behind `db` (not a transaction of it: those keep their own connection). */
export function notePostgresPool(db: object, pool: PoolLike): void {
  pools.set(db, pool);
}

/**
 * Runs an execSql statement (already in its PostgreSQL form) on a pooled connection of `db` directly
 * and returns the result as kysely would, or undefined when `db` is not a database openPostgres made.
 * kysely's executor adds nothing to a raw statement here (no plugins) but a query node, an id, a
 * parameter copy and a connection wrapper per call, and the dispatcher runs one per turn.
 */
export function runOnPool<R>(db: object, text: string, parameters: readonly unknown[]): Promise<QueryResult<R>> | undefined {
  const pool = pools.get(db);
  return pool === undefined ? undefined : run<R>(pool, text, parameters);
}

async function run<R>(pool: PoolLike, text: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
  const client = await pool.connect();
  try {
    const { command, rowCount, rows } = await client.query(text, parameters as unknown[]);
    const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
    return { numAffectedRows: changed ? BigInt(rowCount ?? 0) : undefined, rows: (rows ?? []) as R[] };
  } finally {
    client.release();
  }
}
