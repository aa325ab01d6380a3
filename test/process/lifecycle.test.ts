import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-proc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The sources through tsx (`npm run dev`, the tests' way). */
const SOURCES = ['--import', 'tsx', join(root, 'src', 'app', 'main.ts')];
/** What `npm start` runs: the service bundled by scripts/build.mjs. */
const NPM_START = [join(root, 'scripts', 'start.mjs')];

/** Starts the service as a real process and resolves once it logs the port it listens on. */
function startService(env: Record<string, string>, entry = SOURCES) {
  const child = spawn(process.execPath, entry, {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', CHAIN_RPC_PORT: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'info', NODE_ENV: 'development', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (line.includes('launch service listening')) resolve((JSON.parse(line) as { port: number }).port);
    });
    void exited.then(() => reject(new Error(`service exited before listening: ${stderr}`)));
  });
  ready.catch(() => undefined); // a test that expects the process to refuse to start awaits `exited` instead
  return { child, ready, exited, lines, stderr: () => stderr };
}

describe('the service process', () => {
  it('on a port already in use says so in one line naming PORT, and prints and stores no development key', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    const busyDir = mkdtempSync(join(tmpdir(), 'launch-busy-'));
    const secretKey = randomBytes(32).toString('base64');
    try {
      const svc = startService({ DATA_DIR: busyDir, PORT: String(taken), SECRET_KEY: secretKey });
      expect(await svc.exited).toEqual({ code: 1, signal: null });
      const message = svc.stderr().trim();
      expect(message).toBe(`Port ${taken} on 127.0.0.1 is already in use: stop the process using it or set PORT to a free port.`);
      expect(svc.lines.some((l) => l.startsWith('sk_'))).toBe(false);
      // No key was created, so the next start that binds prints one.
      const again = startService({ DATA_DIR: busyDir, SECRET_KEY: secretKey });
      await again.ready;
      expect(again.lines.some((l) => /^sk_[A-Za-z0-9_-]{40,}$/.test(l))).toBe(true);
      again.child.kill('SIGTERM');
      await again.exited;
    } finally {
      blocker.close();
      rmSync(busyDir, { recursive: true, force: true });
    }
  });

  it.each([
    ['from the sources', SOURCES, 'sources'],
    ['as npm start runs it (bundled)', NPM_START, 'bundle'],
  ])('%s: serves health, prints a development key once, and on SIGTERM exits 0 with the database closed', async (_name, entry, sub) => {
    const env = { DATA_DIR: join(dir, sub), SECRET_KEY: randomBytes(32).toString('base64') };
    const svc = startService(env, entry);
    const port = await svc.ready;
    const health = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('healthy');
    const head = await fetch(`http://127.0.0.1:${port}/api/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const keyLine = svc.lines.find((l) => /^sk_[A-Za-z0-9_-]{40,}$/.test(l));
    expect(keyLine).toBeDefined();
    const launches = await fetch(`http://127.0.0.1:${port}/api/launches`, { headers: { authorization: `Bearer ${keyLine}` } });
    expect(launches.status).toBe(200);

    const dbFile = join(env.DATA_DIR, 'launch-service.sqlite');
    expect(existsSync(`${dbFile}-wal`)).toBe(true);
    svc.child.kill('SIGTERM');
    expect(await svc.exited).toEqual({ code: 0, signal: null });
    // SQLite removes the WAL file when the last connection closes cleanly.
    expect(existsSync(`${dbFile}-wal`)).toBe(false);
    expect(svc.lines.some((l) => l.includes('stopped cleanly'))).toBe(true);

    // A second start finds the key and prints none.
    const again = startService(env, entry);
    await again.ready;
    again.child.kill('SIGINT');
    expect((await again.exited).code).toBe(0);
    expect(again.lines.some((l) => l.startsWith('sk_'))).toBe(false);
  }, 60_000);

  it('with the local cluster port 8899 taken, serves it on a free port, says which, and tells the tools in DATA_DIR/local.json', async () => {
    const { createServer } = await import('node:net');
    // Whatever holds 8899 (another validator, or this blocker) makes the default port unavailable.
    const blocker = createServer();
    await new Promise<void>((resolve) => {
      blocker.once('error', () => resolve());
      blocker.listen(8899, '127.0.0.1', resolve);
    });
    const moved = join(dir, 'moved');
    const svc = startService({ DATA_DIR: moved, SECRET_KEY: randomBytes(32).toString('base64'), CHAIN_RPC_PORT: '' });
    try {
      const port = await svc.ready;
      const warning = svc.lines.findIndex((l) => l.includes('port 8899 is taken'));
      expect(warning).toBeGreaterThanOrEqual(0);
      const { url } = JSON.parse(svc.lines[warning]!) as { url: string };
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(url).not.toBe('http://127.0.0.1:8899');
      expect(svc.lines.some((l) => /^sk_[A-Za-z0-9_-]{40,}$/.test(l))).toBe(true);
      const local = JSON.parse(readFileSync(join(moved, 'local.json'), 'utf8')) as { serviceUrl: string; rpcUrl: string; wsUrl: string; pid: number };
      expect(local).toEqual({ serviceUrl: `http://127.0.0.1:${port}`, rpcUrl: url, wsUrl: url.replace('http', 'ws'), pid: svc.child.pid });
      const rpc = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth' }) });
      expect(((await rpc.json()) as { result: string }).result).toBe('ok');
      svc.child.kill('SIGTERM');
      expect(await svc.exited).toEqual({ code: 0, signal: null });
      expect(existsSync(join(moved, 'local.json'))).toBe(false);
    } finally {
      if (svc.child.exitCode === null && svc.child.signalCode === null) svc.child.kill('SIGKILL');
      blocker.close();
    }
  }, 60_000);

  it('refuses to start on a bad variable, naming it', async () => {
    const svc = startService({ DATA_DIR: dir, PORT: 'eighty' });
    const exit = await svc.exited;
    expect(exit.code).toBe(1);
    expect(svc.stderr()).toContain('PORT must be an integer');
  }, 30_000);
  it('refuses a second process on the same data directory with a message naming the lock, while the first keeps serving', async () => {
    const lockDir = mkdtempSync(join(tmpdir(), 'launch-lock-'));
    const env = { DATA_DIR: lockDir, SECRET_KEY: randomBytes(32).toString('base64') };
    try {
      const first = startService(env);
      const port = await first.ready;
      const second = startService(env);
      expect(await second.exited).toEqual({ code: 1, signal: null });
      expect(second.stderr()).toContain(join(lockDir, 'launch-service.sqlite.lock'));
      expect(second.stderr()).not.toMatch(/\n\s+at /); // one message, no stack
      expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
      first.child.kill('SIGTERM');
      expect(await first.exited).toEqual({ code: 0, signal: null });
      // The lock goes with its process: the next start takes it.
      const third = startService(env);
      await third.ready;
      third.child.kill('SIGTERM');
      await third.exited;
    } finally {
      rmSync(lockDir, { recursive: true, force: true });
    }
  }, 60_000);
});
