import type { Kysely } from 'kysely';

// Frozen once landed. Indexes the retention sweep (docs/architecture.md, "Retention") reads by:
// the oldest events first, an event's deliveries, the dead letters of an event and of a launch, and
// closed dead letters by when they closed. Without them each batch would scan the whole table. The
// deliveries index holds only `event_id`, which never changes: a delivery's status changes (the
// dispatcher's hot path) do not touch it. Ended watches are found through `watches_due` (state first).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('outbox_events_created').on('outbox_events').column('created_at').execute();
  await db.schema.createIndex('deliveries_event').on('deliveries').column('event_id').execute();
  await db.schema.createIndex('dead_letters_event').on('dead_letters').column('event_id').execute();
  await db.schema.createIndex('dead_letters_launch').on('dead_letters').column('launch_id').execute();
  await db.schema.createIndex('dead_letters_closed').on('dead_letters').columns(['status', 'updated_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of ['dead_letters_closed', 'dead_letters_launch', 'dead_letters_event', 'deliveries_event', 'outbox_events_created']) {
    await db.schema.dropIndex(index).ifExists().execute();
  }
}
