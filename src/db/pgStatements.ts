import { createHash } from 'node:crypto';
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
