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
import { loadConfig } from '../src/config/config.js';
import { switchToIncrementalVacuum, type AutoVacuumMode } from '../src/db/incrementalVacuum.js';
import { acquireWriterLock } from '../src/db/writerLock.js';

function main(): number {
  if (process.argv.length > 2) {
    process.stderr.write('usage: npm run vacuum\n');
    return 2;
  }
  const config = loadConfig();
  if (config.postgres || config.databasePath === ':memory:') {
    process.stderr.write('DATABASE_URL is not a SQLite file: there is nothing to switch (PostgreSQL reclaims space with its own autovacuum).\n');
    return 2;
  }
  const lock = acquireWriterLock(config.databasePath);
  try {
    const before = statSync(config.databasePath).size;
    const started = Date.now();
    const db = new SqliteDatabase(config.databasePath, { fileMustExist: true });
    let was: AutoVacuumMode;
    try {
      db.pragma('busy_timeout = 5000');
      was = switchToIncrementalVacuum(db);
      if (was === 'INCREMENTAL') {
        process.stdout.write(`${config.databasePath} already gives space back (auto_vacuum INCREMENTAL); nothing to do\n`);
        return 0;
      }
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    const after = statSync(config.databasePath).size;
    process.stdout.write(`${config.databasePath}: auto_vacuum INCREMENTAL (was ${was}), ${before} bytes before, ${after} after (${Date.now() - started} ms)\n`);
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
