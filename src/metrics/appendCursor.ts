/**
 * Reads an append-only table in `rowid` order across scrapes, counting every row exactly once.
 *
 * On SQLite one writer commits rows in rowid order, so everything up to the last row read is final.
 * On PostgreSQL the rowid is a sequence: a transaction that took a lower value can commit after one
 * that took a higher value, so the last row read is not a safe place to continue from. The cursor
 * keeps a floor below which every row has been counted, remembers the rows counted above it (a later
 * read starts at the floor again and skips them), and raises the floor over a gap once a row above
 * the gap has been known for `gapTimeoutMs`: by then the transaction that held the missing value has
 * committed (and was read) or rolled back (sequence values are never reused). A transaction still
 * open after that long is counted as lost; `gapTimeoutMs = 0` (SQLite) never waits.
 */
export interface AppendCursor {
  /** Read rows with a rowid above this; every row at or below it has been counted. */
  readonly floor: number;
  /** True the first time a row is offered (count it); false for a row already counted. */
  take(rowid: number, now: number): boolean;
  /** After a read: raises the floor over counted rows and over gaps older than the timeout. */
  settle(now: number): void;
}

export function createAppendCursor(gapTimeoutMs: number): AppendCursor {
  let floor = 0;
  /** Rows counted above the floor → when they were first read. */
  const above = new Map<number, number>();
  return {
    get floor() {
      return floor;
    },
    take(rowid, now) {
      if (rowid <= floor || above.has(rowid)) return false;
      above.set(rowid, now);
      return true;
    },
    settle(now) {
      if (above.size === 0) return;
      for (const rowid of [...above.keys()].sort((a, b) => a - b)) {
        const readAt = above.get(rowid)!;
        if (rowid !== floor + 1 && now - readAt < gapTimeoutMs) break;
        floor = rowid;
        above.delete(rowid);
      }
    },
  };
}
