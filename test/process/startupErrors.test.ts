import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const payer = join(dir, 'payer.json');
writeFileSync(payer, JSON.stringify([...Keypair.generate().secretKey]));

/** `npm start` as a real process (the bundle scripts/start.mjs builds), until it exits. */
function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', CHAIN_RPC_PORT: 'off', LOG_FORMAT: 'json', LOG_LEVEL: 'warn', NODE_ENV: 'development', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A start that wrongly succeeds is stopped after a while, so the test fails instead of hanging.
  const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
  return new Promise((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr }))));
}

describe.concurrent('a start the operator misconfigured stops with one line naming the variable, and no stack trace', () => {
  it.each([
    ['an unreachable PostgreSQL server', { DATABASE_URL: 'postgres://nope', SOLANA_RPC_URL: 'http://127.0.0.1:1', SOLANA_PAYER_KEYPAIR: payer }, 'DATABASE_URL', /host nope:5432.*ENOTFOUND|EAI_AGAIN/],
    ['a misspelt scheme (not a SQLite file named postgress:)', { DATABASE_URL: 'postgress://user@db.example/launches' }, 'DATABASE_URL', /unknown scheme "postgress:\/\/"/],
    ['a SQLite file in a directory that does not exist', { DATABASE_URL: join(dir, 'absent', 'db.sqlite') }, 'DATABASE_URL', /directory that does not exist/],
    ['a host name that does not resolve', { HOST: 'localhots' }, 'HOST', /HOST=localhots cannot be resolved/],
    ['a payer keypair file that is not there', { SOLANA_RPC_URL: 'http://127.0.0.1:1', SOLANA_PAYER_KEYPAIR: join(dir, 'absent.json') }, 'SOLANA_PAYER_KEYPAIR', /absent\.json cannot be read: ENOENT/],
    ['an unknown NODE_ENV (which ran in development and printed an all-scope key)', { NODE_ENV: 'prod' }, 'NODE_ENV', /must be one of production, development, test.*got "prod"/],
  ])('%s', async (_name, env, variable, words) => {
    const dataDir = mkdtempSync(join(dir, 'data-'));
    const { code, stdout, stderr } = await start({ DATA_DIR: dataDir, ...env });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toMatch(words);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stdout).not.toMatch(/sk_/); // no development key printed
    // A URL-looking DATABASE_URL of an unknown scheme is refused before any file is made for it.
    expect(existsSync(join(root, 'postgress:'))).toBe(false);
  }, 60_000);
});
