import type SqliteDatabase from 'better-sqlite3';

/** `PRAGMA auto_vacuum`'s values: 0 NONE, 1 FULL, 2 INCREMENTAL. */
export type AutoVacuumMode = 'NONE' | 'FULL' | 'INCREMENTAL';

/** The file's `PRAGMA auto_vacuum`. */
export function autoVacuumMode(sqlite: SqliteDatabase.Database): AutoVacuumMode {
  const value = sqlite.pragma('auto_vacuum', { simple: true });
  return value === 2 ? 'INCREMENTAL' : value === 1 ? 'FULL' : 'NONE';
}

/**
 * Makes a new SQLite file give space back (docs/configuration.md, "Retention"): `auto_vacuum =
 * INCREMENTAL` only takes on a file with no table yet, so it is set before the first migration. A
 * file made without it keeps its mode (`npm run vacuum`, service stopped, switches it): with `NONE`
 * its free pages are reused by new rows but never returned; with `FULL` every commit that frees pages
 * returns them itself. Returns the file's mode. Touches nothing on a file that has tables (no write at open).
 */
export function prepareAutoVacuum(sqlite: SqliteDatabase.Database): AutoVacuumMode {
  const tables = sqlite.prepare('select count(*) from sqlite_master').pluck().get() as number;
  if (tables === 0) sqlite.pragma('auto_vacuum = INCREMENTAL');
  return autoVacuumMode(sqlite);
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

/**
 * One-time switch of a file to `auto_vacuum = INCREMENTAL` (the service stopped). From `NONE` it
 * takes a full VACUUM, which rewrites the file; from `FULL` the pragma alone (SQLite switches between
 * the two auto-vacuum modes at any time). Returns the mode the file had.
 */
export function switchToIncrementalVacuum(sqlite: SqliteDatabase.Database): AutoVacuumMode {
  const was = autoVacuumMode(sqlite);
  if (was === 'INCREMENTAL') return was;
  sqlite.pragma('auto_vacuum = INCREMENTAL');
  if (was === 'NONE') sqlite.exec('VACUUM');
  return was;
}
