import { isPostgres } from '../../db/dialect.js';
import type { Db } from '../../db/database.js';
import { countOutboxBetween, lastOutboxRowid, outboxRowidsAfter, ownerEventsBetween, type StreamEventRow } from '../sql/streamQueries.js';

/** Rows read per page. */
const PAGE = 200;
/** Rowids looked at when searching a PostgreSQL gap. */
const GAP_SCAN = 1000;

export interface EventCursorOptions {
  db: Db;
  owner: string;
  /** Resume after this outbox rowid (the event named by Last-Event-ID, or the outbox's end for a new stream). */
  after: number;
  /**
   * How long a missing rowid may hold the stream back (PostgreSQL only): a transaction that took a
   * lower rowid can commit after one with a higher rowid, so the stream stops below a gap until the
   * gap fills or is this old (its transaction rolled back: sequence values are never reused).
   */
  gapTimeoutMs: number;
  /** Wall time in ms (the gap timeout is about how long a transaction lives). */
  now(): number;
}

export interface EventCursor {
  /** The next page of the owner's events after the cursor, in outbox order; `more` when another page is ready. */
  next(): Promise<{ rows: StreamEventRow[]; more: boolean }>;
}

/**
 * Reads one owner's events in outbox (`rowid`) order, never skipping one that commits late. On
 * SQLite one writer commits rows in rowid order, so everything up to the outbox's end is final. On
 * PostgreSQL the cursor advances only over rowids that are present, or missing for longer than the
 * gap timeout (the same rule as the metrics' append cursor).
 */
export function createEventCursor(options: EventCursorOptions): EventCursor {
  const { db, owner } = options;
  const postgres = isPostgres(db);
  let after = options.after;
  /** Missing rowids → when they were first seen missing. */
  const missingSince = new Map<number, number>();

  /**
   * The highest rowid up to which every row has committed (or its gap has timed out), and whether
   * rows above it are known to be ready (the gap scan stopped at its bound, not at a gap).
   */
  async function horizon(): Promise<{ upTo: number; capped: boolean }> {
    const hi = await lastOutboxRowid(db);
    if (!postgres || hi <= after) return { upTo: hi, capped: false };
    if ((await countOutboxBetween(db, after, hi)) === hi - after) {
      missingSince.clear();
      return { upTo: hi, capped: false };
    }
    const now = options.now();
    const present = await outboxRowidsAfter(db, after, GAP_SCAN);
    let safe = after;
    for (const rowid of present) {
      if (rowid > safe + 1) {
        // A gap from safe + 1, timed from when it was first seen.
        const since = missingSince.get(safe + 1) ?? now;
        missingSince.set(safe + 1, since);
        if (now - since < options.gapTimeoutMs) return { upTo: safe, capped: false };
      }
      safe = rowid;
    }
    for (const start of missingSince.keys()) if (start <= safe) missingSince.delete(start);
    return { upTo: safe, capped: present.length === GAP_SCAN };
  }

  return {
    async next() {
      const { upTo, capped } = await horizon();
      if (upTo <= after) return { rows: [], more: false };
      const rows = await ownerEventsBetween(db, owner, after, upTo, PAGE);
      const full = rows.length === PAGE;
      after = full ? rows[rows.length - 1]!.rowid : upTo;
      return { rows, more: full || capped };
    },
  };
}
