/**
 * `npm run vacuum`: switches the SQLite database of DATA_DIR (or the file of DATABASE_URL), made
 * before the service created its files with `auto_vacuum = INCREMENTAL`, to it (docs/configuration.md,
 * "Retention"), so the space retention frees goes back to the disk in short steps. Run it with the
 * service stopped: it takes the service's writer lock and refuses while a service holds it. A file
 * with `auto_vacuum = NONE` takes one full VACUUM, which rewrites the whole file (through the WAL: as
 * much free disk as the file again); one with `FULL` only the pragma.
 */
import { statSync } from 'node:fs';
import SqliteDatabase from 'better-sqlite3';
import { databaseLocation } from '../src/config/config.js';
import { switchToIncrementalVacuum, type AutoVacuumMode } from '../src/db/incrementalVacuum.js';
import { acquireWriterLock } from '../src/db/writerLock.js';

function main(): number {
  if (process.argv.length > 2) {
    process.stderr.write('usage: npm run vacuum\n');
    return 2;
  }
  // Not loadConfig: it creates DATA_DIR (and a secret key in it), and a mistyped DATA_DIR must leave nothing behind.
  const { databasePath, postgresUrl } = databaseLocation(process.env);
  if (postgresUrl !== undefined) {
    process.stdout.write('DATABASE_URL is PostgreSQL: nothing to do (its own autovacuum makes the space of deleted rows reusable; there is no auto_vacuum mode to switch)\n');
    return 0;
  }
  if (databasePath === ':memory:') {
    process.stderr.write('DATABASE_URL is an in-memory database: there is no file to switch\n');
    return 2;
  }
  if (statSync(databasePath, { throwIfNoEntry: false })?.isFile() !== true) {
    process.stderr.write(`no database file at ${databasePath}: check DATA_DIR (or DATABASE_URL); nothing was changed\n`);
    return 2;
  }
  const lock = acquireWriterLock(databasePath);
  try {
    const before = statSync(databasePath).size;
    const started = Date.now();
    const db = new SqliteDatabase(databasePath, { fileMustExist: true });
    let was: AutoVacuumMode;
    try {
      db.pragma('busy_timeout = 5000');
      was = switchToIncrementalVacuum(db);
      if (was === 'INCREMENTAL') {
        process.stdout.write(`${databasePath} already gives space back (auto_vacuum INCREMENTAL); nothing to do\n`);
        return 0;
      }
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    const after = statSync(databasePath).size;
    process.stdout.write(`${databasePath}: auto_vacuum INCREMENTAL (was ${was}), ${before} bytes before, ${after} after (${Date.now() - started} ms)\n`);
    return 0;
  } finally {
    lock.release();
  }
}

try {
  process.exitCode = main();
} catch (error) {
  process.stderr.write(`vacuum failed: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
