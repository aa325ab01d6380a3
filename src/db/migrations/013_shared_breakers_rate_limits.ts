import type { Kysely } from 'kysely';

// Frozen once landed. Several instances on one database (docs/architecture.md, SQLite and PostgreSQL):
// - endpoint_breakers becomes the authority for every instance: `version` makes each state change a
//   compare-and-set, and `trial_owner`/`trial_until` is the one half-open trial lease across instances;
// - rate_limit_windows counts API requests per subject and fixed window, shared by every instance.

export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite's ALTER TABLE adds one at a time.
  await db.schema.alterTable('endpoint_breakers').addColumn('version', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('endpoint_breakers').addColumn('trial_owner', 'text').execute();
  await db.schema.alterTable('endpoint_breakers').addColumn('trial_until', 'bigint').execute();
  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limit_windows_pk', ['subject', 'window_start'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('rate_limit_windows').execute();
  await db.schema.alterTable('endpoint_breakers').dropColumn('trial_until').execute();
  await db.schema.alterTable('endpoint_breakers').dropColumn('trial_owner').execute();
  await db.schema.alterTable('endpoint_breakers').dropColumn('version').execute();
}
