import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';

const repoRoot = join(import.meta.dirname, '..', '..');
const root = mkdtempSync(join(tmpdir(), 'backup-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('npm run backup into a directory that does not exist yet', () => {
  it('makes the directory and writes the copy there (the README\'s backups/launch-service-<date>.sqlite on a first run)', async () => {
    const env = { DATA_DIR: join(root, 'data'), NODE_ENV: 'development', DATABASE_URL: '', LOG_LEVEL: 'silent' };
    mkdirSync(env.DATA_DIR);
    const opened = openDatabase(loadConfig(env).databasePath);
    await migrateToLatest(opened.db);
    await opened.close();
    // Relative to where the command runs, as the README runs it.
    const result = spawnSync(process.execPath, ['--import', pathToFileURL(join(repoRoot, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href, join(repoRoot, 'scripts', 'backup.ts'), 'backups/launch-service-2026-01-31.sqlite'], {
      cwd: root,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const target = join(root, 'backups', 'launch-service-2026-01-31.sqlite');
    expect(result.stdout).toContain(`to ${target} (`);
    const copy = openDatabase(target);
    expect((await copy.db.selectFrom('api_keys').select('id').execute()).length).toBe(0);
    await copy.close();
  });
});
