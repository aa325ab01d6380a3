import type { Kysely } from 'kysely';

// Frozen once landed. Tracing across the durable hops (docs/architecture.md, "Tracing"): the W3C
// traceparent of the span that created a launch (launches.trace_parent: the API request's, so the
// runner's spans continue the request's trace) and of the span that recorded each outbox event
// (outbox_events.trace_parent: each webhook attempt is a span under it, and its delivery carries it
// on). Null while tracing is off.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launches').addColumn('trace_parent', 'text').execute();
  await db.schema.alterTable('outbox_events').addColumn('trace_parent', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox_events').dropColumn('trace_parent').execute();
  await db.schema.alterTable('launches').dropColumn('trace_parent').execute();
}
