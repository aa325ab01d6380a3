import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-listen-secret-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run listen with LAUNCH_LISTEN_SECRET', () => {
  it('refuses a secret that is not whsec_ followed by base64, naming the variable and the format, before connecting', async () => {
    // The README receiver's secret has underscores after whsec_: no Standard Webhooks key can be made of it.
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'listen.ts'), '--forward-to', 'http://127.0.0.1:9/hooks', '--key', 'sk_unused'], {
      cwd: root,
      env: { ...process.env, DATA_DIR: dir, LAUNCH_SERVICE_URL: 'http://127.0.0.1:9', LAUNCH_LISTEN_SECRET: 'whsec_demo_secret_0123456789' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000); // the old code kept trying to connect
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => (clearTimeout(timer), resolve(c))));
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('LAUNCH_LISTEN_SECRET must be whsec_ followed by base64 (at least 16 characters), as the secrets listen makes: e.g. whsec_$(openssl rand -base64 24)');
  });
});
