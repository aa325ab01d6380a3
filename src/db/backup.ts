import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import SqliteDatabase from 'better-sqlite3';

/**
 * Copies a SQLite database that a service may be writing to, consistently (README "Operations"):
 * `VACUUM INTO` from a read-only connection of its own reads one snapshot in a single read
 * transaction, so the copy is the database as of one commit — launches, outbox and, on the embedded
 * chain, the chain's state together — and the service's writers are never blocked (WAL). Unlike the
 * page-by-page backup API it never starts over when the service commits meanwhile. The copy is
 * written beside the target and renamed into place, so a failed backup leaves no partial file.
 */
export function backupSqliteDatabase(source: string, target: string): { bytes: number; ms: number } {
  if (!existsSync(source)) throw new Error(`no database at ${source}`);
  if (existsSync(target)) throw new Error(`${target} exists; choose a new file`);
  const started = Date.now();
  const partial = `${target}.partial`;
  rmSync(partial, { force: true });
  const db = new SqliteDatabase(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare('VACUUM INTO ?').run(partial);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    db.close();
  }
  const copy = new SqliteDatabase(partial, { fileMustExist: true });
  try {
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`the copy failed its integrity check: ${String(check)}`);
  } catch (error) {
    copy.close();
    rmSync(partial, { force: true });
    throw error;
  }
  copy.close();
  renameSync(partial, target);
  return { bytes: statSync(target).size, ms: Date.now() - started };
}
