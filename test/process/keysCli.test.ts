import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findActiveKey } from '../../src/auth/apiKeys.js';
import { openDatabase } from '../../src/db/database.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keys(...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'keys.ts'), ...args], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('npm run keys', () => {
  it('creates a key printed once on its own line, lists it without the secret, and revokes it', async () => {
    const created = keys('create', '--owner', 'acme', '--scopes', 'launches:write,launches:read');
    expect(created.status).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);

    const { db, close } = openDatabase(join(dir, 'launch-service.sqlite'));
    const row = await findActiveKey(db, key);
    expect(row).toMatchObject({ owner: 'acme', scopes: 'launches:write,launches:read' });
    expect(JSON.stringify(await db.selectFrom('api_keys').selectAll().execute())).not.toContain(key);

    const listed = keys('list');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(row!.id);
    expect(listed.stdout).not.toContain(key);

    expect(keys('revoke', row!.id).status).toBe(0);
    expect(await findActiveKey(db, key)).toBeUndefined();
    await close();
  }, 30_000);

  it('refuses unknown scopes and a missing owner, creating nothing', () => {
    const bad = keys('create', '--owner', 'acme', '--scopes', 'launches:delete');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('unknown scope(s): launches:delete');
    expect(keys('create', '--scopes', 'admin').status).toBe(1);
    expect(keys('revoke', 'key_nope').status).toBe(1);
  }, 30_000);
});
