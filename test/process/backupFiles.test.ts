import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { backupSqliteDatabase } from '../../src/db/backup.js';
import { startChildService } from '../reliability/support/childService.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'backup-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env = (dir: string) => ({
  DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off', DATABASE_URL: '',
});
const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
const backup = (dir: string, file: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'scripts/backup.ts', file], { cwd: repoRoot, env: { ...process.env, ...env(dir) }, encoding: 'utf8' });

describe('the database files and their backups are readable by their owner only', () => {
  it('a running service\'s database, WAL, shared-memory and lock files are 0600, and so is a backup of it; an existing .partial is refused, not deleted', async () => {
    const dir = join(root, 'data');
    mkdirSync(dir);
    const svc = await startChildService(env(dir));
    try {
      const files = readdirSync(dir).filter((name) => name.endsWith('.sqlite') || /\.sqlite(-wal|-shm|\.lock)$/.test(name));
      expect(files.some((name) => name.endsWith('-wal'))).toBe(true);
      expect(files.some((name) => name.endsWith('.lock'))).toBe(true);
      for (const name of files) expect(`${name} ${mode(join(dir, name))}`).toBe(`${name} 600`);

      const target = join(root, 'copy.sqlite');
      const ok = backup(dir, target);
      expect(ok.stderr).toBe('');
      expect(ok.status).toBe(0);
      expect(mode(target)).toBe('600');

      // Another backup's file (or a killed one's) in the way: refused with its name, left as it was.
      const second = join(root, 'second.sqlite');
      writeFileSync(`${second}.partial`, 'another backup writing');
      const refused = backup(dir, second);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(`${second}.partial exists`);
      expect(readFileSync(`${second}.partial`, 'utf8')).toBe('another backup writing');
      expect(existsSync(second)).toBe(false);
    } finally {
      await svc.kill('SIGTERM');
    }
  });

  it('a target that cannot be written is named in the error, not its .partial file', () => {
    const source = join(root, 'data', 'launch-service.sqlite');
    const target = join(root, 'no-such-directory', 'copy.sqlite');
    expect(() => backupSqliteDatabase(source, target)).toThrow(`cannot write ${target}`);
    try {
      backupSqliteDatabase(source, target);
    } catch (error) {
      expect((error as Error).message).not.toContain('.partial');
    }
  });
});
