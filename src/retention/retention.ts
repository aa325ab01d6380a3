import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { createPollLoop } from '../lib/pollLoop.js';
import {
  sweepClosedDeadLetters,
  sweepEndedLaunches,
  sweepEndedWatches,
  sweepExpiredSessions,
  sweepRateLimitWindows,
  sweepSettledEvents,
} from './sweeps.js';

/** Rows deleted by one round of batches, by what they were. */
export interface RetentionRound {
  deadLetters: number;
  events: number;
  watches: number;
  sessions: number;
  rateLimitWindows: number;
  launches: number;
}

export interface Retention {
  start(): void;
  stop(): Promise<void>;
  /** One batch of each kind; `more` when a batch was full (another round would find more). */
  runOnce(): Promise<{ deleted: RetentionRound; more: boolean }>;
  /** Rounds until nothing past retention is left; the total deleted. */
  drain(): Promise<RetentionRound>;
}

export interface RetentionOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** `RETENTION`: how long settled rows are kept. */
  retentionMs: number;
  /** `LAUNCH_RETENTION`: how long ended launches are kept; undefined keeps them. */
  launchRetentionMs: number | undefined;
  /** Between rounds when the last one found nothing more (default 60 s). */
  intervalMs?: number;
  /** Rows per batch (default 200): each batch is one short transaction. */
  batchSize?: number;
  /** Between full rounds of a backlog (default 100 ms), so the sweep never holds the database for long. */
  pauseMs?: number;
}

/**
 * Deletes what is past retention (docs/architecture.md, "Retention") on a small poll loop: a round
 * is one bounded batch of each kind; a backlog is worked through a round at a time with a pause
 * between rounds. Safe with several instances: on PostgreSQL one instance sweeps at a time.
 */
export function createRetention(options: RetentionOptions): Retention {
  const { db, clock, logger } = options;
  const limit = options.batchSize ?? 200;
  const pauseMs = options.pauseMs ?? 100;

  async function runOnce(): Promise<{ deleted: RetentionRound; more: boolean }> {
    const cutoff = clock.now() - options.retentionMs;
    const args = { cutoff, limit };
    // Dead letters first: a closed one is what lets its event go.
    const deleted: RetentionRound = {
      deadLetters: await sweepClosedDeadLetters(db, args),
      events: await sweepSettledEvents(db, args),
      watches: await sweepEndedWatches(db, args),
      sessions: await sweepExpiredSessions(db, args),
      rateLimitWindows: await sweepRateLimitWindows(db, args),
      launches:
        options.launchRetentionMs === undefined ? 0 : await sweepEndedLaunches(db, { cutoff: clock.now() - options.launchRetentionMs, limit }),
    };
    const more = Object.values(deleted).some((n) => n >= limit);
    if (Object.values(deleted).some((n) => n > 0)) logger.info({ component: 'retention', deleted }, 'deleted rows past retention');
    return { deleted, more };
  }

  const loop = createPollLoop({
    logger,
    what: 'deleting rows past retention',
    intervalMs: options.intervalMs ?? 60_000,
    async turn() {
      const { more } = await runOnce();
      if (more) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      return more;
    },
  });

  return {
    start: () => loop.start(),
    stop: async () => void (await loop.stop()),
    runOnce,
    async drain() {
      const total: RetentionRound = { deadLetters: 0, events: 0, watches: 0, sessions: 0, rateLimitWindows: 0, launches: 0 };
      for (;;) {
        const { deleted, more } = await runOnce();
        for (const key of Object.keys(total) as (keyof RetentionRound)[]) total[key] += deleted[key];
        if (!more) return total;
      }
    },
  };
}
