import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-chain-port-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run chain on a port that is taken', () => {
  it('exits 1 with one line naming the port and CHAIN_RPC_PORT, no error code or stack', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'chain.ts')], {
        cwd: root,
        env: { ...process.env, DATA_DIR: dir, CHAIN_RPC_PORT: String(taken), LOG_LEVEL: 'warn', LOG_FORMAT: 'json', NODE_ENV: 'development' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toEqual([
        `Port ${taken} on 127.0.0.1 is already in use (another validator, or a service serving its local cluster there): stop the process using it or set CHAIN_RPC_PORT to a free port (PubSub takes the next one too).`,
      ]);
    } finally {
      blocker.close();
    }
  });
});
