import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './001_initial.js';

/** Every migration, by name; names sort in the order they run. */
export const migrations: Record<string, Migration> = {
  '001_initial': m001,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
