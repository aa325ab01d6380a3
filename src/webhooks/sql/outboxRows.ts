import type { Insertable } from 'kysely';
import { compiledQuery, type CompiledStatement } from '../../db/compiledQuery.js';
import type { Db, DbOrTx } from '../../db/database.js';
import type { DeliveriesTable } from '../../db/schema.js';
import { endpointHost, endpointKey } from '../endpointKey.js';

/* The outbox's writes (outbox.ts): events and their deliveries in compiled multi-row inserts, the sequence numbers, the owner's endpoints. */

/** Takes the next sequence number of an owner's own events (the first is 1). */
export const nextStreamSequenceStatement = compiledQuery<{ key: string }, { next_sequence: number }>((db: Db, p) =>
  db
    .insertInto('event_streams')
    .values({ key: p.key, next_sequence: 2 })
    .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ next_sequence: eb('event_streams.next_sequence', '+', 1) })))
    .returning('next_sequence'),
);

/** Rows per insert statement: far below both stores' parameter limits, and few compiled shapes. */
const ROWS_PER_INSERT = 64;

/** Inserts rows with a compiled multi-row insert (its shape is the number of rows), in bounded statements. */
export async function insertRows<R extends object>(trx: DbOrTx, insert: MultiRowInsert, rows: readonly R[]): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const count = Math.min(ROWS_PER_INSERT, rows.length - start);
    const params: Record<string, unknown> = {};
    for (let i = 0; i < count; i++) {
      const row = rows[start + i] as Record<string, unknown>;
      const keys = (insert.keys[i] ??= insert.columns.map((c) => `${i}.${c}`));
      for (let c = 0; c < keys.length; c++) params[keys[c]!] = row[insert.columns[c]!];
    }
    await insert.statement.execute(trx, params, count);
  }
}

interface MultiRowInsert {
  statement: CompiledStatement<Record<string, unknown>>;
  columns: readonly string[];
  /** The parameter names of row `i` by column (`"3.body"`), built once per row index. */
  keys: string[][];
}

/** A multi-row insert of `table`'s `columns` compiled per number of rows. */
function multiRowInsert(table: 'outbox_events' | 'deliveries', columns: readonly string[]): MultiRowInsert {
  const statement = compiledQuery<Record<string, unknown>>((db: Db, p, shape) =>
    db.insertInto(table).values(Array.from({ length: Number(shape) }, (_, i) => Object.fromEntries(columns.map((c) => [c, p[`${i}.${c}`]])) as never)),
  );
  return { statement, columns, keys: [] };
}

/** Takes the launch's next event sequence number, with where and for whom its events are delivered (and the sealed secret, for a handoff). */
export const nextSequenceStatement = compiledQuery<{ id: string }, { next_sequence: number; webhook_url: string; owner: string; webhook_secret_enc: string }>((db: Db, p) =>
  db
    .updateTable('launches')
    .set((eb) => ({ next_sequence: eb('next_sequence', '+', 1) }))
    .where('id', '=', p.id)
    .returning(['next_sequence', 'webhook_url', 'owner', 'webhook_secret_enc']),
);

export const insertEventsStatement = multiRowInsert('outbox_events', ['id', 'launch_id', 'sequence', 'event', 'body', 'request_id', 'created_at', 'trace_parent']);

export const insertDeliveriesStatement = multiRowInsert('deliveries', [
  'id',
  'event_id',
  'launch_id',
  'url',
  'host',
  'endpoint',
  'status',
  'attempt_count',
  'next_attempt_at',
  'lease_owner',
  'lease_expires_at',
  'last_error',
  'last_status_code',
  'created_at',
  'updated_at',
  'completed_at',
  'endpoint_id',
  'owner',
]);

/** The owner's enabled webhook endpoints (as `enabledEndpointsOf`) with their sealed secrets (for a handoff), compiled once. */
export const endpointsStatement = compiledQuery<
  { owner: string },
  { id: string; url: string; events: string; secret_enc: string; signature_scheme: 'service' | 'standard'; previous_secret_enc: string | null; previous_secret_expires_at: number | null; rate_limit_per_second: number | null; ordering: string | null }
>((db: Db, p) =>
  db
    .selectFrom('webhook_endpoints')
    .select(['id', 'url', 'events', 'secret_enc', 'signature_scheme', 'previous_secret_enc', 'previous_secret_expires_at', 'rate_limit_per_second', 'ordering'])
    .where('owner', '=', p.owner)
    .where('disabled_at', 'is', null),
);

export type NewDelivery = Insertable<DeliveriesTable>;

/** The breaker keys of a URL, remembered: a launch's events go to the same few URLs. */
const urlKeys = new Map<string, { host: string; endpoint: string }>();
function keysOf(url: string): { host: string; endpoint: string } {
  let keys = urlKeys.get(url);
  if (!keys) {
    if (urlKeys.size >= 1000) urlKeys.clear();
    keys = { host: endpointHost(url), endpoint: endpointKey(url) };
    urlKeys.set(url, keys);
  }
  return keys;
}

/** A pending delivery row, due at once. */
export function deliveryRow(id: string, now: number, eventId: string, launchId: string, owner: string, url: string, endpointId: string | null): NewDelivery {
  return {
    id,
    event_id: eventId,
    launch_id: launchId,
    owner,
    url,
    ...keysOf(url),
    status: 'pending',
    attempt_count: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_expires_at: null,
    last_error: null,
    last_status_code: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
    endpoint_id: endpointId,
  };
}
