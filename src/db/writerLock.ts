import SqliteDatabase from 'better-sqlite3';
import { makeDatabaseFilePrivate } from './privateFile.js';

/** Another process already serves from this database file. */
export class DatabaseLockedError extends Error {
  constructor(readonly lockPath: string) {
    super(
      `another launch service process holds the writer lock ${lockPath} on this data directory; ` +
        'two processes on one SQLite file would each run their own embedded chain and breakers. Stop the other process, or give this one its own DATA_DIR.',
    );
    this.name = 'DatabaseLockedError';
  }
}

/** The held lock; released by `release()` or, whatever happens, when the process ends. */
export interface WriterLock {
  readonly path: string;
  release(): void;
}

/**
 * Takes the one-writer lock of a database file: an exclusive SQLite transaction, never committed,
 * on a small companion file `<database>.lock`. SQLite's locks are the operating system's file
 * locks, so the lock is released when the holder exits or is killed (no stale lock file to clean
 * up), and a second process — or a second service in the same process — is refused at once.
 */
export function acquireWriterLock(databasePath: string): WriterLock {
  const path = `${databasePath}.lock`;
  makeDatabaseFilePrivate(path);
  const lock = new SqliteDatabase(path);
  try {
    lock.pragma('busy_timeout = 0');
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('create table if not exists writer_lock (held integer)');
    lock.exec('begin exclusive');
    // A write makes SQLite take and keep the exclusive lock on the file itself.
    lock.exec('insert into writer_lock values (1)');
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) throw new DatabaseLockedError(path);
    throw error;
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      lock.close();
    },
  };
}
