import type { Kysely } from 'kysely';

// Frozen once landed. A step that a transient chain fault (timeout, 429, 5xx, expired blockhash,
// open breaker) holds up waits instead of failing (docs/api.md): `waiting_since` is when the current
// wait began (the launch fails once it is older than LAUNCH_TRANSIENT_DEADLINE), `next_attempt_at`
// when the runner tries the step again. Both are cleared when the step completes or is requeued.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launch_steps').addColumn('waiting_since', 'bigint').execute();
  await db.schema.alterTable('launch_steps').addColumn('next_attempt_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('launch_steps').dropColumn('next_attempt_at').execute();
  await db.schema.alterTable('launch_steps').dropColumn('waiting_since').execute();
}
