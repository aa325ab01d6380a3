import type SqliteDatabase from 'better-sqlite3';

/** `PRAGMA auto_vacuum` of a file whose free pages can be given back a few at a time. */
const INCREMENTAL = 2;

/**
 * Makes a new SQLite file give space back (docs/configuration.md, "Retention"): `auto_vacuum =
 * INCREMENTAL` only takes on a file with no table yet, so it is set before the first migration. A
 * file made without it keeps `NONE` (switching needs a full VACUUM: `npm run vacuum`, service
 * stopped); it works the same, its free pages are reused by new rows but never returned. Returns
 * whether the file is incremental. Touches nothing on a file that has tables (no write at open).
 */
export function prepareAutoVacuum(sqlite: SqliteDatabase.Database): boolean {
  const tables = sqlite.prepare('select count(*) from sqlite_master').pluck().get() as number;
  if (tables === 0) sqlite.pragma('auto_vacuum = INCREMENTAL');
  return sqlite.pragma('auto_vacuum', { simple: true }) === INCREMENTAL;
}

/**
 * Returns at most `pages` free pages of the file to the file system, in one short write transaction
 * (`PRAGMA incremental_vacuum(N)`; `exec` runs it to the end, a prepared statement's `run()` would
 * stop after one page). The caller holds the connection. Returns the pages freed and still free.
 */
export function reclaimFreePages(sqlite: SqliteDatabase.Database, pages: number): { freed: number; left: number } {
  const before = sqlite.pragma('freelist_count', { simple: true }) as number;
  if (before === 0) return { freed: 0, left: 0 };
  sqlite.exec(`pragma incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  const left = sqlite.pragma('freelist_count', { simple: true }) as number;
  return { freed: before - left, left };
}

/** One-time switch of a file made with `auto_vacuum = NONE`: a full VACUUM (the service stopped). */
export function switchToIncrementalVacuum(sqlite: SqliteDatabase.Database): boolean {
  if (sqlite.pragma('auto_vacuum', { simple: true }) === INCREMENTAL) return false;
  sqlite.pragma('auto_vacuum = INCREMENTAL');
  sqlite.exec('VACUUM');
  return true;
}
