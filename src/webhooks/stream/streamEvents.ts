import type { Db } from '../../db/database.js';
import { filterMatches } from '../endpoints/filters.js';
import type { StreamEventRow } from '../sql/streamQueries.js';
import { createEventCursor } from './eventCursor.js';
import type { EventFeed } from './eventFeed.js';
import { sleepUnlessAborted } from '../../lib/sleep.js';

/** Where a stream writes (the SSE response). */
export interface EventSink {
  event(row: StreamEventRow): Promise<void>;
  /** A comment line, so proxies and clients see the connection alive. */
  heartbeat(): Promise<void>;
}

export interface StreamEventsOptions {
  db: Db;
  feed: EventFeed;
  owner: string;
  /** Resume after this outbox rowid. */
  after: number;
  /** Event filter entries (`*`, a kind, `group.*`), as a webhook endpoint's. */
  filter: readonly string[];
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  timing: StreamTiming;
  /** Wall time in ms. */
  now?: () => number;
}

export interface StreamTiming {
  /** The fallback poll when no wake-up arrives. */
  pollMs: number;
  /** A comment after this long without a write. */
  heartbeatMs: number;
  /** Reads at most this often, however often the feed wakes. */
  minIntervalMs: number;
  /** See EventCursorOptions.gapTimeoutMs (PostgreSQL). */
  gapTimeoutMs: number;
}

export const DEFAULT_STREAM_TIMING: StreamTiming = { pollMs: 2_000, heartbeatMs: 15_000, minIntervalMs: 50, gapTimeoutMs: 10_000 };

/**
 * Writes an owner's events to `sink` in outbox order from `after` on, matching `filter`, until the
 * client goes away or the feed closes. Between reads it waits for the feed's wake-up (an event
 * committed), the poll interval, or the heartbeat, whichever comes first.
 */
export async function streamEvents(options: StreamEventsOptions, sink: EventSink): Promise<void> {
  const { feed, signal, timing } = options;
  const now = options.now ?? (() => performance.now());
  const cursor = createEventCursor({ db: options.db, owner: options.owner, after: options.after, gapTimeoutMs: timing.gapTimeoutMs, now });
  const stopped = () => signal.aborted || feed.closed.aborted;
  let lastWrite = now();
  while (!stopped()) {
    const readAt = now();
    const { rows, more } = await cursor.next();
    for (const row of rows) {
      if (stopped()) return;
      if (!filterMatches(options.filter, row.event)) continue;
      await sink.event(row);
      lastWrite = now();
    }
    if (more) continue;
    if (now() - lastWrite >= timing.heartbeatMs) {
      await sink.heartbeat();
      lastWrite = now();
    }
    await feed.wait(Math.max(1, Math.min(timing.pollMs, lastWrite + timing.heartbeatMs - now())), signal);
    const early = readAt + timing.minIntervalMs - now();
    if (early > 0 && !stopped()) await sleepUnlessAborted(early, signal);
  }
}
