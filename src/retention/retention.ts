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
  SKIPPED,
  type SweepResult,
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
  /**
   * One batch of each kind, then (SQLite, once rows were deleted) one step of giving free pages back;
   * `more` when a batch was full or free pages are left to give back (another round has work);
   * `skipped` when another instance held the sweep lock for some kind (PostgreSQL): its rows are
   * that instance's to delete this round, and were not looked at here.
   */
  runOnce(): Promise<{ deleted: RetentionRound; freedPages: number; more: boolean; skipped: boolean }>;
  /**
   * Rounds until nothing past retention is left and the freed space is given back; the total
   * deleted. A round that found the lock held is tried again, so a drain beside another instance's
   * sweep ends only once a round of its own found nothing more.
   */
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
  /**
   * SQLite: gives at most `pages` free pages back to the file system in one short transaction
   * (database.ts `reclaimFreePages`); absent on PostgreSQL, whose plain deletes leave space to its
   * own vacuum.
   */
  reclaimFreePages?: (pages: number) => Promise<{ freed: number; left: number }>;
  /** Free pages given back per round (default 128, 512 KiB of 4 KiB pages: about 2 ms of writing). */
  vacuumPages?: number;
}

/**
 * Deletes what is past retention (docs/architecture.md, "Retention") on a small poll loop: a round
 * is one bounded batch of each kind; a backlog is worked through a round at a time with a pause
 * between rounds. On SQLite, once a round deleted rows, each round also gives a bounded number of
 * the freed pages back to the file system, until fewer than a round's worth are left (kept for the
 * next inserts). Safe with several instances: on PostgreSQL one instance sweeps at a time.
 */
export function createRetention(options: RetentionOptions): Retention {
  const { db, clock, logger } = options;
  const limit = options.batchSize ?? 200;
  const pauseMs = options.pauseMs ?? 100;
  const vacuumPages = options.vacuumPages ?? 128;
  /** Rows were deleted since the free pages were last given back; the pages given back so far. */
  let vacuum: { freed: number } | undefined;

  /** One step of giving free pages back, while a deletion left some: whether more are left. */
  async function reclaimStep(): Promise<{ freed: number; more: boolean }> {
    if (vacuum === undefined || options.reclaimFreePages === undefined) return { freed: 0, more: false };
    const { freed, left } = await options.reclaimFreePages(vacuumPages);
    vacuum.freed += freed;
    // Less than a step's worth left: done (a few free pages are what the next inserts take first).
    if (left >= vacuumPages && freed > 0) return { freed, more: true };
    if (vacuum.freed > 0) logger.info({ component: 'retention', pages: vacuum.freed }, 'gave free pages back to the file system');
    vacuum = undefined;
    return { freed, more: false };
  }

  async function runOnce(): Promise<{ deleted: RetentionRound; freedPages: number; more: boolean; skipped: boolean }> {
    const cutoff = clock.now() - options.retentionMs;
    const args = { cutoff, limit };
    let skipped = false;
    const counted = (result: SweepResult): number => {
      if (result === SKIPPED) skipped = true;
      return result ?? 0;
    };
    // Dead letters first: a closed one is what lets its event go.
    const deleted: RetentionRound = {
      deadLetters: counted(await sweepClosedDeadLetters(db, args)),
      events: counted(await sweepSettledEvents(db, args)),
      watches: counted(await sweepEndedWatches(db, args)),
      sessions: counted(await sweepExpiredSessions(db, args)),
      rateLimitWindows: counted(await sweepRateLimitWindows(db, args)),
      launches:
        options.launchRetentionMs === undefined ? 0 : counted(await sweepEndedLaunches(db, { cutoff: clock.now() - options.launchRetentionMs, limit })),
    };
    const full = Object.values(deleted).some((n) => n >= limit);
    if (Object.values(deleted).some((n) => n > 0)) {
      logger.info({ component: 'retention', deleted }, 'deleted rows past retention');
      vacuum ??= { freed: 0 };
    }
    const reclaimed = await reclaimStep();
    return { deleted, freedPages: reclaimed.freed, more: full || reclaimed.more, skipped };
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
        const { deleted, more, skipped } = await runOnce();
        for (const key of Object.keys(total) as (keyof RetentionRound)[]) total[key] += deleted[key];
        if (!more && !skipped) return total;
        // Another instance's sweep holds the lock for a moment: its batch, then ours.
        if (skipped && !more) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}
