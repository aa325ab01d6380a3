import type { Kysely } from 'kysely';

// Frozen once landed. A wake-up that lands while a watch is leased by a running pass (docs/watcher.md): the
// pass may have read history before the activity, and its commit sets the next check a full
// interval away. `woken_at` records the wake-up (cleared when a pass claims the watch), and the
// commit keeps the next check no later than it.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('watches').addColumn('woken_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('watches').dropColumn('woken_at').execute();
}
