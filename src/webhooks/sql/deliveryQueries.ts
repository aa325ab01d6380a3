import { sql } from 'kysely';
import type { DbOrTx } from '../../db/database.js';
import { execSql, placeholders } from '../../db/sqlText.js';
import { contextOf, type ContextRow, type DeliveryContext } from '../dispatch/deliveryContext.js';

/**
 * The owner of delivery `d` (SQL): its launch's (`l`), or for an owner's own event (no launch) the owner
 * named in its key `own_<owner>` (webhooks/outbox.ts ownerStreamKey).
 */
export const OWNER_OF_DELIVERY = `coalesce(l.owner, case when substr(d.launch_id, 1, 4) = 'own_' then substr(d.launch_id, 5) end)`;

const contextTexts: string[] = [];

/** One text per number of deliveries (a claim returns up to a few dozen). */
function contextsText(count: number): string {
  let text = contextTexts[count];
  if (text === undefined) {
    // An owner's own events have no launch: the owner is in their key (`own_<owner>`, outbox.ts).
    text = `select d.id, d.launch_id, d.endpoint_id, ${OWNER_OF_DELIVERY} as owner, e.id as event_id, e.event, e.sequence, e.body, e.request_id,
        l.webhook_secret_enc, w.secret_enc, w.signature_scheme, w.previous_secret_enc, w.previous_secret_expires_at, w.rate_limit_per_second, w.ordering
      from deliveries d
      inner join outbox_events e on e.id = d.event_id
      left join launches l on l.id = d.launch_id
      left join webhook_endpoints w on w.id = d.endpoint_id
      where d.id in (${placeholders(count)})`;
    contextTexts[count] = text;
  }
  return text;
}

/** Loads the event body and the sealed secret(s) of each given delivery (the launch's, or its endpoint's), in one query. */
export async function loadDeliveryContexts(db: DbOrTx, deliveryIds: readonly string[]): Promise<Map<string, DeliveryContext>> {
  const out = new Map<string, DeliveryContext>();
  if (deliveryIds.length === 0) return out;
  const { rows } = await execSql<ContextRow>(db, contextsText(deliveryIds.length), deliveryIds);
  for (const row of rows) {
    const ctx = contextOf(row);
    if (ctx) out.set(row.id, ctx);
  }
  return out;
}

const deliveryColumns = [
  'd.id',
  'd.event_id',
  'd.launch_id',
  'd.url',
  'd.host',
  'd.status',
  'd.attempt_count',
  'd.next_attempt_at',
  'd.last_error',
  'd.last_status_code',
  'd.created_at',
  'd.updated_at',
  'd.completed_at',
  'd.endpoint_id',
  'e.event',
  'e.body',
  'e.sequence',
] as const;

/** Deliveries joined with their event and launch (none for an owner's own events), the shape the delivery routes show. */
function deliveryViews(db: DbOrTx) {
  return db
    .selectFrom('deliveries as d')
    .innerJoin('outbox_events as e', 'e.id', 'd.event_id')
    .leftJoin('launches as l', 'l.id', 'd.launch_id')
    .select(deliveryColumns)
    .select(sql<string>`${sql.raw(OWNER_OF_DELIVERY)}`.as('owner'));
}

/** A delivery with its event kind, sequence and the launch owner. */
export async function getDelivery(db: DbOrTx, deliveryId: string) {
  return deliveryViews(db).where('d.id', '=', deliveryId).executeTakeFirst();
}

export type DeliveryView = NonNullable<Awaited<ReturnType<typeof getDelivery>>>;

/** One page of a launch's deliveries, oldest first (by event sequence, then creation), and how many it has in all. */
export async function listLaunchDeliveries(db: DbOrTx, launchId: string, page: { limit: number; offset: number }): Promise<{ rows: DeliveryView[]; total: number }> {
  const [rows, { n }] = await Promise.all([
    deliveryViews(db).where('d.launch_id', '=', launchId).orderBy('e.sequence').orderBy('d.created_at').orderBy('d.id').limit(page.limit).offset(page.offset).execute(),
    db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('launch_id', '=', launchId).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(n) };
}

/** The launch's owner and current webhook URL, or undefined when there is no such launch. */
export async function getLaunchTarget(db: DbOrTx, launchId: string): Promise<{ owner: string; webhookUrl: string } | undefined> {
  const row = await db.selectFrom('launches').select(['owner', 'webhook_url']).where('id', '=', launchId).executeTakeFirst();
  return row ? { owner: row.owner, webhookUrl: row.webhook_url } : undefined;
}

/** The traceparent an event was recorded under (outbox_events.trace_parent); null when none. Read only while tracing is on. */
export async function eventTraceParent(db: DbOrTx, eventId: string): Promise<string | null> {
  const row = await db.selectFrom('outbox_events').select('trace_parent').where('id', '=', eventId).executeTakeFirst();
  return row?.trace_parent ?? null;
}
