import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';

/** Owner read and write only, as `secret.key`: the database holds keys' hashes, sealed secrets and the chain's state. */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Makes a SQLite file (and its `-wal` and `-shm` files, if any) readable by its owner only before
 * SQLite opens it: a new file is created empty with mode 0600 (SQLite then creates the WAL and
 * shared-memory files with the database file's mode), and an existing one made by an older version
 * at 0644 is narrowed. A file we may not chmod (another owner's) is left as it is.
 */
export function makeDatabaseFilePrivate(path: string): void {
  if (path === '' || path === ':memory:' || path.startsWith('file:')) return;
  if (!existsSync(path)) closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, PRIVATE_FILE_MODE);
    } catch {
      // Missing (no WAL yet) or not ours: nothing to narrow.
    }
  }
}
