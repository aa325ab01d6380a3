import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !alive(pid);
}

// A test that times out never reaches its clean-up, and a worker the runner kills runs none: the
// service and chain processes the tests start end with the process that started them, so they do
// not keep running under the tests that follow (test/support/exitWithParent.ts).
describe('processes the tests spawn', () => {
  const dir = mkdtempSync(join(tmpdir(), 'child-cleanup-'));
  const leftovers: number[] = [];
  afterAll(() => {
    for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('end when the process that started them is killed with SIGKILL', async () => {
    const parent = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'support', 'spawnsChildren.ts'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids = await new Promise<{ chain: number; service: number }>((resolve, reject) => {
      createInterface({ input: parent.stdout }).once('line', (line) => resolve(JSON.parse(line) as { chain: number; service: number }));
      parent.once('exit', (code) => reject(new Error(`the stand-in exited (${code}) before starting its children`)));
    });
    leftovers.push(pids.chain, pids.service);
    expect(alive(pids.chain) && alive(pids.service)).toBe(true);
    parent.kill('SIGKILL');
    expect(await gone(pids.chain, 10_000)).toBe(true);
    expect(await gone(pids.service, 10_000)).toBe(true);
  }, 60_000);
});
