/**
 * `npm run backup -- <file>`: a consistent copy of the SQLite database of DATA_DIR (or the file of
 * DATABASE_URL), taken while the service runs (README "Operations"). Restore by putting the copy
 * in place of the database file of a stopped service that has the same SECRET_KEY.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { backupSqliteDatabase } from '../src/db/backup.js';

function main(): number {
  const target = process.argv[2];
  if (target === undefined || target === '' || process.argv.length > 3) {
    process.stderr.write('usage: npm run backup -- <file>\n');
    return 2;
  }
  const config = loadConfig();
  if (config.postgres) {
    process.stderr.write('DATABASE_URL is PostgreSQL: back it up with pg_dump -Fc and restore with pg_restore (README "Operations").\n');
    return 2;
  }
  if (config.databasePath === ':memory:') {
    process.stderr.write('DATABASE_URL is an in-memory database: there is nothing on disk to back up.\n');
    return 2;
  }
  // `backups/launch-service-<date>.sqlite` on a first run: its directory is made, not reported as a database that could not be opened.
  mkdirSync(dirname(resolve(target)), { recursive: true });
  const { bytes, ms } = backupSqliteDatabase(config.databasePath, resolve(target));
  process.stdout.write(`backed up ${config.databasePath} to ${resolve(target)} (${bytes} bytes in ${ms} ms)\n`);
  return 0;
}

try {
  process.exitCode = main();
} catch (error) {
  process.stderr.write(`backup failed: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
