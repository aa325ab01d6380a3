/**
 * Reads an append-only table in `rowid` order across scrapes, counting every row exactly once.
 *
 * On SQLite one writer commits rows in rowid order, so everything up to the last row read is final.
 * On PostgreSQL the rowid is a sequence: a transaction that took a lower value can commit after one
 * that took a higher value, so the last row read is not a safe place to continue from. The cursor
 * keeps a floor below which every row has been counted, remembers the rows counted above it (a later
 * read starts at the floor again and skips them), and raises the floor over a gap only once the
 * database says the gap is final: each row is taken with the transaction-id horizon (`xmax`) of the
 * snapshot that first saw it, and every rowid below it was taken by a transaction whose id is below
 * that horizon (a transaction takes its id before its rowid, migration 026). When a later read began
 * with every transaction below that horizon ended (its snapshot's `xmin` at or past it), a row
 * missing below is one that rolled back: nothing is passed on a timer, so a transaction held open
 * for any length of time is counted when it commits. On SQLite `settle(Infinity)` passes every gap.
 */
export interface AppendCursor {
  /** Read rows with a rowid above this; every row at or below it has been counted. */
  readonly floor: number;
  /** True the first time a row is offered (count it); false for a row already counted. `horizon`: the `xmax` of the snapshot that read it. */
  take(rowid: number, horizon: number): boolean;
  /**
   * After a read that started from the floor: raises the floor over counted rows, and over gaps
   * below a row whose horizon is at or below `ended` — the `xmin` of a snapshot taken before that
   * read (every transaction below it had ended).
   */
  settle(ended: number): void;
}

export function createAppendCursor(): AppendCursor {
  let floor = 0;
  /** Rows counted above the floor → the horizon of the snapshot that first read them. */
  const above = new Map<number, number>();
  return {
    get floor() {
      return floor;
    },
    take(rowid, horizon) {
      if (rowid <= floor || above.has(rowid)) return false;
      above.set(rowid, horizon);
      return true;
    },
    settle(ended) {
      if (above.size === 0) return;
      for (const rowid of [...above.keys()].sort((a, b) => a - b)) {
        if (rowid !== floor + 1 && above.get(rowid)! > ended) break;
        floor = rowid;
        above.delete(rowid);
      }
    },
  };
}
