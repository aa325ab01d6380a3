import { sql, type Kysely } from 'kysely';

// Frozen once landed. Circuit breakers are keyed by endpoint (scheme, host, port and path) instead
// of by host, so customers sharing a host do not stall each other:
// - deliveries.endpoint holds each delivery's breaker key, backfilled from its URL;
// - endpoint_breakers replaces breaker_states (host-level state cannot be split into endpoints:
//   breakers start closed after the upgrade and re-open on their endpoint's own failures).

/** The breaker key of a URL; the same rule as webhooks/endpointKey.ts (a migration imports no app code). */
function endpointOf(url: string): string {
  try {
    const u = new URL(url);
    const port = u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '';
    return `${u.protocol}//${u.hostname}:${port}${u.pathname}`;
  } catch {
    return url;
  }
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deliveries').addColumn('endpoint', 'text', (c) => c.notNull().defaultTo('')).execute();
  const urls = await db.selectFrom('deliveries').select('url').distinct().execute();
  for (const { url } of urls as Array<{ url: string }>) {
    await db.updateTable('deliveries').set({ endpoint: endpointOf(url) }).where('url', '=', url).execute();
  }
  await db.schema
    .createTable('endpoint_breakers')
    .addColumn('endpoint', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('opened_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.dropTable('breaker_states').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('breaker_states')
    .addColumn('host', 'text', (c) => c.primaryKey())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('opened_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.dropTable('endpoint_breakers').execute();
  await sql`alter table deliveries drop column endpoint`.execute(db);
}
