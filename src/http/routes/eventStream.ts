import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Db } from '../../db/database.js';
import { filterEntryProblem } from '../../webhooks/endpoints/filters.js';
import { lastOutboxRowid, ownerEventRowid, ownerLastEventId } from '../../webhooks/sql/streamQueries.js';
import type { EventFeed } from '../../webhooks/stream/eventFeed.js';
import { DEFAULT_STREAM_TIMING, streamEvents, type StreamTiming } from '../../webhooks/stream/streamEvents.js';
import { createStreamSlots, DEFAULT_STREAM_LIMITS, type StreamLimits } from '../../webhooks/stream/streamSlots.js';
import type { AppEnv } from '../env.js';
import { ApiError, invalidRequest } from '../errors.js';
import { requireScope } from '../middleware/auth.js';
import { clientAddressOf } from '../clientAddress.js';

export interface EventStreamRouteDeps {
  db: Db;
  feed: EventFeed;
  timing?: Partial<StreamTiming>;
  /** Open streams per key, per owner and in all (defaults: DEFAULT_STREAM_LIMITS). */
  limits?: StreamLimits;
}

const BOUND_WORDS = { key: 'this API key', owner: 'this owner', service: 'the service', address: 'this client address' } as const;

/** `GET /events/stream`: the caller's events as Server-Sent Events (docs/api.md, "Event stream"). Mount at `/`. */
export function createEventStreamRoutes(deps: EventStreamRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const timing = { ...DEFAULT_STREAM_TIMING, ...deps.timing };
  const slots = createStreamSlots(deps.limits ?? DEFAULT_STREAM_LIMITS);

  app.get('/events/stream', async (c) => {
    const auth = requireScope(c, 'launches:read');
    const filter = readFilter(c.req.query('events'));
    const lastEventId = c.req.header('last-event-id')?.trim();
    let after: number;
    /** Where a new stream starts, told to the client as an `id:` alone, so a reconnect before the first event misses nothing. */
    let position: string | undefined;
    if (lastEventId) {
      const rowid = await ownerEventRowid(deps.db, auth.owner, lastEventId);
      if (rowid === undefined) throw invalidRequest('Last-Event-ID names none of your events', { fields: [{ field: 'Last-Event-ID', message: 'unknown event id' }] });
      after = rowid;
    } else {
      after = await lastOutboxRowid(deps.db);
      position = await ownerLastEventId(deps.db, auth.owner, after);
    }
    const slot = slots.open(auth.keyId, auth.owner, clientAddressOf(c));
    if ('bound' in slot) {
      throw new ApiError(429, 'too_many_streams', `${BOUND_WORDS[slot.bound]} already has ${slot.limit} event streams open, the most allowed; close one first (docs/api.md, "Event stream")`, { bound: slot.bound, limit: slot.limit }, undefined, { 'Retry-After': '5' });
    }
    const logger = c.get('logger');
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      const gone = new AbortController();
      stream.onAbort(() => (gone.abort(), slot.release()));
      try {
        await stream.write(position === undefined ? ': stream open\n\n' : `: stream open\nid: ${position}\n\n`);
        await streamEvents(
          { db: deps.db, feed: deps.feed, owner: auth.owner, after, filter, signal: gone.signal, timing },
          {
            event: (row) => stream.writeSSE({ id: row.id, data: row.body }),
            heartbeat: async () => void (await stream.write(': heartbeat\n\n')),
          },
        );
      } catch (error) {
        // The client went away mid-write, or the database failed: end the stream; the client resumes with Last-Event-ID.
        if (!gone.signal.aborted) logger.warn({ err: error, component: 'event-stream' }, 'event stream ended by an error');
      } finally {
        slot.release();
      }
    });
  });

  return app;
}

/** `?events=launch.*,vesting.created`: the entries a webhook endpoint's filter accepts; `*` when absent. */
function readFilter(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return ['*'];
  const entries = raw.split(',').map((e) => e.trim());
  const fields = entries.flatMap((entry, i) => {
    const problem = filterEntryProblem(entry);
    return problem ? [{ field: `events[${i}]`, message: problem }] : [];
  });
  if (fields.length > 0 || entries.length > 50) throw invalidRequest('events must be a comma-separated list of event filters', { fields: fields.length > 0 ? fields : [{ field: 'events', message: 'at most 50 entries' }] });
  return entries;
}
