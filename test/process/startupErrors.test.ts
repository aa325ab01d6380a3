import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';
import { StartupFailure, startService } from '../../src/app/startup.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const payer = join(dir, 'payer.json');
writeFileSync(payer, JSON.stringify([...Keypair.generate().secretKey]));
const base = { PORT: '0', HOST: '127.0.0.1', CHAIN_RPC_PORT: 'off', LOG_FORMAT: 'json', LOG_LEVEL: 'warn', NODE_ENV: 'development' };

/** `npm start` as a real process (the bundle scripts/start.mjs builds), until it exits. */
function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    env: { ...process.env, ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A start that wrongly succeeds is stopped after a while, so the test fails instead of hanging
  // (a loaded machine takes seconds to load the bundle's packages).
  const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
  return new Promise((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr }))));
}

/** What `npm start` prints and exits with for `env`, found in this process: the line of its StartupFailure. */
async function failureLine(env: Record<string, string>): Promise<string> {
  const error = await startService({ ...base, ...env }).then(
    async (started) => {
      await started.service.stop();
      started.server.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  if (!(error instanceof StartupFailure)) throw new Error(`expected a StartupFailure, got ${error instanceof Error ? (error.stack ?? error.message) : 'a start that succeeded'}`);
  return error.line;
}

const cases: Array<[string, Record<string, string>, string, RegExp]> = [
  ['an unreachable PostgreSQL server', { DATABASE_URL: 'postgres://nope', SOLANA_RPC_URL: 'http://127.0.0.1:1', SOLANA_PAYER_KEYPAIR: payer }, 'DATABASE_URL', /host nope:5432.*ENOTFOUND|EAI_AGAIN/],
  ['a misspelt scheme (not a SQLite file named postgress:)', { DATABASE_URL: 'postgress://user@db.example/launches' }, 'DATABASE_URL', /unknown scheme "postgress:\/\/"/],
  ['a SQLite file in a directory that does not exist', { DATABASE_URL: join(dir, 'absent', 'db.sqlite') }, 'DATABASE_URL', /directory that does not exist/],
  ['a host name that does not resolve', { HOST: 'localhots' }, 'HOST', /HOST=localhots cannot be resolved/],
  ['a payer keypair file that is not there', { SOLANA_RPC_URL: 'http://127.0.0.1:1', SOLANA_PAYER_KEYPAIR: join(dir, 'absent.json') }, 'SOLANA_PAYER_KEYPAIR', /absent\.json cannot be read: ENOENT/],
  ['an unknown NODE_ENV (which ran in development and printed an all-scope key)', { NODE_ENV: 'prod' }, 'NODE_ENV', /must be one of production, development, test.*got "prod"/],
];

// Each misconfiguration through the start's own code (src/app/startup.ts, what main.ts runs), in
// this process: a real process per case spent most of its time loading the bundle's packages (15-27 s
// each at load 14). The real process is below, for a failure of each stage.
describe('a start the operator misconfigured fails with one line naming the variable, and no stack trace', () => {
  it.each(cases)('%s', async (_name, env, variable, words) => {
    const line = await failureLine({ DATA_DIR: mkdtempSync(join(dir, 'data-')), ...env });
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain(variable);
    expect(line).toMatch(words);
    // A URL-looking DATABASE_URL of an unknown scheme is refused before any file is made for it.
    expect(existsSync(join(root, 'postgress:'))).toBe(false);
  }, 30_000);
});

describe.concurrent('npm start, misconfigured, prints that line alone on stderr and exits 1, with no key printed', () => {
  it.each([cases[5]!, cases[4]!])('%s (the config read; the service built)', async (_name, env) => {
    const dataDir = mkdtempSync(join(dir, 'data-'));
    const expected = await failureLine({ DATA_DIR: dataDir, ...env });
    const { code, stdout, stderr } = await start({ DATA_DIR: dataDir, ...env });
    expect(code).toBe(1);
    expect(stderr).toBe(`${expected}\n`);
    expect(stdout).not.toMatch(/sk_/); // no development key printed
  }, 120_000);
});
