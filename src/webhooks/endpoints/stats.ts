import type { DbOrTx } from '../../db/database.js';
import { percentile } from '../../lib/percentile.js';

export const STATS_WINDOW_MS = 24 * 3600_000;


/** Attempts to one endpoint in the 24 h before `now`: success rate and p50/p99 latency (docs/webhooks.md). */
export async function endpointStats(db: DbOrTx, endpointId: string, now: number) {
  const from = now - STATS_WINDOW_MS;
  const attempts = await db
    .selectFrom('delivery_attempts as a')
    .innerJoin('deliveries as d', 'd.id', 'a.delivery_id')
    .select(['a.outcome', 'a.duration_ms'])
    .where('d.endpoint_id', '=', endpointId)
    .where('a.started_at', '>=', from)
    .where('a.started_at', '<=', now)
    .execute();
  const succeeded = attempts.filter((a) => a.outcome === 'success').length;
  const durations = attempts.map((a) => Number(a.duration_ms)).sort((x, y) => x - y);
  const deliveries = await db
    .selectFrom('deliveries')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('endpoint_id', '=', endpointId)
    .where('created_at', '>=', from)
    .groupBy('status')
    .execute();
  const byStatus = Object.fromEntries(deliveries.map((d) => [d.status, Number(d.n)]));
  return {
    windowStart: new Date(from).toISOString(),
    windowEnd: new Date(now).toISOString(),
    attempts: attempts.length,
    succeeded,
    failed: attempts.length - succeeded,
    successRate: attempts.length === 0 ? null : succeeded / attempts.length,
    latencyMs: { p50: percentile(durations, 50), p99: percentile(durations, 99) },
    deliveries: { pending: byStatus.pending ?? 0, delivered: byStatus.delivered ?? 0, failed: byStatus.failed ?? 0, paused: byStatus.paused ?? 0 },
  };
}
