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
    let busy = false;
    try {
      db.pragma('busy_timeout = 5000');
      was = switchToIncrementalVacuum(db);
      if (was === 'INCREMENTAL') {
        process.stdout.write(`${databasePath} already gives space back (auto_vacuum INCREMENTAL); nothing to do\n`);
        return 0;
      }
      // Writes the new file back from the WAL and empties the WAL; `busy` when another connection
      // (npm run backup's snapshot) still reads the old pages: then the file keeps its old size for now.
      const [checkpoint] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
      busy = checkpoint?.busy !== 0;
    } finally {
      db.close();
    }
    // Measured after the close: what is on disk now (the close of the last connection removes the WAL).
    const after = statSync(databasePath).size;
    const wal = statSync(`${databasePath}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    const ms = Date.now() - started;
    if (wal > 0) {
      const why = busy ? 'another connection, such as npm run backup, reads an older snapshot of the file' : 'the checkpoint did not finish';
      process.stdout.write(
        `${databasePath}: auto_vacuum INCREMENTAL (was ${was}), ${before} bytes before; the WAL was not truncated (${why}): the database file is ${after} bytes and its WAL ${wal} bytes; the file takes its new size at the next checkpoint, which the service makes once it runs (${ms} ms)\n`,
      );
      return 0;
    }
    process.stdout.write(`${databasePath}: auto_vacuum INCREMENTAL (was ${was}), ${before} bytes before, ${after} after (${ms} ms)\n`);
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
