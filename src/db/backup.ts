import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import SqliteDatabase from 'better-sqlite3';
import { PRIVATE_FILE_MODE } from './privateFile.js';

/**
 * Copies a SQLite database that a service may be writing to, consistently (README "Operations"):
 * `VACUUM INTO` from a read-only connection of its own reads one snapshot in a single read
 * transaction, so the copy is the database as of one commit — launches, outbox and, on the embedded
 * chain, the chain's state together — and the service's writers are never blocked (WAL). Unlike the
 * page-by-page backup API it never starts over when the service commits meanwhile. The copy is
 * written beside the target as `<target>.partial`, mode 0600 like the database, and renamed into
 * place, so a failed backup leaves no partial file. A `.partial` file already there (a backup
 * running, or one that was killed) is refused, never deleted; errors name the target.
 */
export function backupSqliteDatabase(source: string, target: string): { bytes: number; ms: number } {
  if (!existsSync(source)) throw new Error(`no database at ${source}`);
  if (existsSync(target)) throw new Error(`${target} exists; choose a new file`);
  const started = Date.now();
  const partial = `${target}.partial`;
  try {
    // Exclusive create: an existing .partial is another backup's (or a killed one's), left alone.
    closeSync(openSync(partial, 'wx', PRIVATE_FILE_MODE));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new Error(`${partial} exists: another backup to ${target} is running, or one was stopped; remove that file if none is running, or choose a new file`);
    }
    throw new Error(`cannot write ${target}: ${code ?? (error as Error).message}`);
  }
  try {
    const db = new SqliteDatabase(source, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      // VACUUM INTO writes into an empty file, keeping its mode.
      db.prepare('VACUUM INTO ?').run(partial);
    } catch (error) {
      throw new Error(`cannot write ${target}: ${(error as Error).message.replaceAll(partial, target)}`);
    } finally {
      db.close();
    }
    const copy = new SqliteDatabase(partial, { fileMustExist: true });
    try {
      const check = copy.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new Error(`the copy failed its integrity check: ${String(check)}`);
    } finally {
      copy.close();
    }
    renameSync(partial, target);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
  return { bytes: statSync(target).size, ms: Date.now() - started };
}
