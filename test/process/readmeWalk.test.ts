/**
 * The README's walk, run as written: every shell block marked `<!-- walk -->` (or `<!-- walk:
 * background, ready "<text>" -->` for a terminal that keeps running, such as the example receiver)
 * is taken from README.md and run in order in one bash session, against the service started with
 * `npm start` in a fresh directory (the checkout's files linked into it, so `./data`, `launch.json`
 * and `backups/` are made there; `scripts/` is copied). Only what a newcomer would type differently is replaced: the
 * ports (8080, 4000: free ones here) and the placeholders the README asks to paste (`sk_...` the
 * printed key, `key_...` an id from the list). A command that fails, or a curl answered >= 400,
 * fails the test, so the README cannot drift from the service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-walk-'));
for (const name of ['package.json', 'node_modules', 'src', 'packages', 'tsconfig.json']) symlinkSync(join(root, name), join(dir, name));
// Copied, not linked: a script run directly compares its own URL with the path it was started by.
cpSync(join(root, 'scripts'), join(dir, 'scripts'), { recursive: true });
const started: ChildProcess[] = [];
afterAll(async () => {
  // Each was started in a process group of its own (npm, and the node it runs): end the group.
  for (const child of started.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
});

export interface WalkBlock {
  code: string;
  /** Runs in a terminal of its own until the end; `ready` is the text it prints once serving. */
  background?: { ready: string };
  line: number;
}

/** The README's shell blocks marked to be walked, in order. */
export function walkBlocks(readme: string): WalkBlock[] {
  const blocks: WalkBlock[] = [];
  const marker = /<!-- walk(?::\s*background,\s*ready "([^"]+)")? -->\n```sh\n([\s\S]*?)\n```/g;
  for (const match of readme.matchAll(marker)) {
    const line = readme.slice(0, match.index).split('\n').length;
    blocks.push({ code: match[2]!, line, ...(match[1] !== undefined ? { background: { ready: match[1] } } : {}) });
  }
  return blocks;
}

/** A block's commands: continued lines (`\`), a heredoc and a quote that spans lines stay one command. */
function commands(code: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let heredoc: string | undefined;
  for (const line of code.split('\n')) {
    current.push(line);
    if (heredoc !== undefined) {
      if (line === heredoc) heredoc = undefined;
      else continue;
    }
    const opened = /<<-?'?(\w+)'?/.exec(line);
    if (opened && line !== opened[1]) {
      heredoc = opened[1];
      continue;
    }
    const text = current.filter((l) => !l.trim().startsWith('#')).join('\n').replace(/\s#[^'"\n]*$/, '');
    if (/\\$/.test(line) || (text.match(/'/g) ?? []).length % 2 === 1) continue;
    out.push(current.join('\n'));
    current = [];
  }
  out.push(current.join('\n'));
  // Lines that are only comments (the README's sample answers) are not commands.
  return out.filter((command) => command.split('\n').some((line) => line.trim() !== '' && !line.trim().startsWith('#')));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The newcomer's environment: nothing of the test runner's (NODE_ENV=test, a test database) leaks in. */
function walkEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CHAIN_CLONE_FROM: 'off', FORCE_COLOR: '0', NO_COLOR: '1' };
  for (const name of ['NODE_ENV', 'DATA_DIR', 'DATABASE_URL', 'TEST_DATABASE_URL', 'PORT', 'HOST', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID', 'LOG_LEVEL', 'LOG_FORMAT']) delete env[name];
  return env;
}

/** Starts `command` in bash in a process group of its own; resolves with its output so far once `ready` is printed. */
function terminal(command: string, env: NodeJS.ProcessEnv, ready: RegExp | string, what: string): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn('bash', ['-c', command], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  started.push(child);
  let output = '';
  const matches = () => (typeof ready === 'string' ? output.includes(ready) : ready.test(output));
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (matches()) resolve({ child, output: () => output });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready:\n${output}`)));
  });
}

/** One bash session, as the second terminal: each command's output and exit status. */
function session(env: NodeJS.ProcessEnv) {
  const bash = spawn('bash', ['--norc', '--noprofile'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  started.push(bash);
  let buffer = '';
  let waiting: ((result: { status: number; output: string }) => void) | undefined;
  bash.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const done = /\n?__WALK__ (\d+)\n/.exec(buffer);
    if (done && waiting) {
      const output = buffer.slice(0, done.index);
      buffer = buffer.slice(done.index + done[0].length);
      const resolve = waiting;
      waiting = undefined;
      resolve({ status: Number(done[1]), output });
    }
  });
  bash.stderr.on('data', (chunk: Buffer) => (buffer += chunk.toString()));
  bash.once('exit', (code) => waiting?.({ status: 1000 + (code ?? 0), output: `the session ended: ${buffer}` }));
  // A curl answered >= 400 fails as a command would (the README's curls print the body either way).
  bash.stdin.write('curl() { command curl --fail-with-body "$@"; }\n');
  return {
    run(command: string): Promise<{ status: number; output: string }> {
      return new Promise((resolve) => {
        waiting = resolve;
        // Its own stdin is not the session's script; stderr joins stdout, as in a terminal.
        bash.stdin.write(`{\n${command}\n} </dev/null 2>&1\nprintf '\\n__WALK__ %s\\n' "$?"\n`);
      });
    },
  };
}

describe("the README's walk", () => {
  it('runs as written: the key, health, keys, the example receiver, a launch to launch.complete, funding and the quote of launch.json, a backup into backups/, then docs/mcp.md\'s curl', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    // Then docs/mcp.md's curl, in the same terminal ($KEY set).
    const mcpBlocks = walkBlocks(readFileSync(join(root, 'docs', 'mcp.md'), 'utf8')).map((block) => ({ ...block, file: 'docs/mcp.md' }));
    const blocks = [...walkBlocks(readme).map((block) => ({ ...block, file: 'README.md' })), ...mcpBlocks];
    expect(blocks.length).toBeGreaterThanOrEqual(7);
    const servicePort = await freePort();
    const receiverPort = await freePort();
    const env = walkEnv();
    const ports = (text: string) =>
      text
        .replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `$1:${servicePort}`)
        .replace(/\b(localhost|127\.0\.0\.1):4000\b/g, `$1:${receiverPort}`)
        .replace(/\bPORT=4000\b/g, `PORT=${receiverPort}`);

    // Terminal 1: `npm start`, the embedded defaults (only the ports moved: 8080 and 8899 may be taken here).
    const service = await terminal('exec npm start', { ...env, PORT: String(servicePort), CHAIN_RPC_PORT: '0' }, /\nsk_[A-Za-z0-9_-]{40,}\n/, 'npm start');
    const key = /\n(sk_[A-Za-z0-9_-]{40,})\n/.exec(service.output())![1]!;

    const shell = session(env);
    const outputs: string[] = [];
    let receiver: { output: () => string } | undefined;
    for (const block of blocks) {
      if (block.background) {
        receiver = await terminal(ports(block.code), env, block.background.ready, `${block.file}:${block.line}`);
        continue;
      }
      for (const command of commands(block.code)) {
        const acmeKey = /^(key_\S+)\tacme\t/m.exec(outputs.join('\n'))?.[1];
        const text = ports(command)
          .replace(/\bsk_\.\.\./g, key)
          .replace(/\bkey_\.\.\./g, acmeKey ?? 'key_...');
        const { status, output } = await shell.run(text);
        if (status !== 0) throw new Error(`${block.file}:${block.line}: \`${command}\` exited ${status}:\n${output}`);
        outputs.push(output);
      }
    }
    const all = outputs.join('\n');

    expect(all).toContain('"status":"healthy"');
    expect(all).toMatch(/"openapi":"3\.1/);
    expect(all).toMatch(/^key_\S+\tacme\tlaunches:write,launches:read\t/m);
    const launchId = /"id":"(lch_[A-Za-z0-9_-]+)"/.exec(all)?.[1];
    expect(launchId).toBeDefined();
    expect(all).toMatch(/"sufficient":true/);
    expect(all).toMatch(/"structuredContent":\{"launches":\[\{"id":"lch_.*"jsonrpc":"2\.0","id":1\}/); // docs/mcp.md's tools/call
    expect(all).toMatch(/^backed up .*\/data\/launch-service\.sqlite to .*\/backups\/launch-service-\d{4}-\d\d-\d\d\.sqlite/m);
    expect(readdirSync(join(dir, 'backups'))).toHaveLength(1);
    expect(existsSync(join(dir, 'launch.json'))).toBe(true);

    // The receiver of "Your first launch" prints the six events the README shows, each verified.
    const deadline = Date.now() + 60_000;
    while (!/launch\.complete/.test(receiver!.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    for (const [n, event] of ['launch.queued', 'launch.processing', 'launch.step_complete create_mint (1/3)', 'launch.step_complete create_metadata (2/3)', 'launch.step_complete distribute_supply (3/3)', 'launch.complete'].entries()) {
      expect(receiver!.output()).toContain(`#${n + 1} ${event}`);
    }
    const launch = await fetch(`http://127.0.0.1:${servicePort}/api/launches/${launchId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await launch.json()) as { launch: { status: string } }).launch.status).toBe('complete');
  }, 240_000);
});

/** The bonding-curve walk needs the two Meteora programs: CHAIN_PROGRAMS_DIR (README "Bonding-curve launches"); skipped cleanly without. */
const CURVE_PROGRAMS = ['dbcij3LWUppWqq96dh6gJWwBifmcGfLSB5D4DuSMaqN', 'cpamdpZCGKUy5JxQXB4dcpGPiikHawvSWAd6mEn1sGG'];
const curveProgramsDir = process.env.CHAIN_PROGRAMS_DIR || undefined;
const haveCurvePrograms = curveProgramsDir !== undefined && CURVE_PROGRAMS.every((id) => existsSync(join(curveProgramsDir, `${id}.so`)));

describe.skipIf(!haveCurvePrograms)(`the README's bonding-curve walk${haveCurvePrograms ? '' : ' [skipped: needs CHAIN_PROGRAMS_DIR with the DBC and DAMM v2 programs]'}`, () => {
  it('runs as written: create, two buys with npm run holder -- buy (Meteora\'s SDK, a real process), the service graduates the curve, fees read and claimed', async () => {
    const blocks = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/<!-- walk:curve -->\n```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    expect(blocks).toHaveLength(3);
    const servicePort = await freePort();
    const env = walkEnv();
    const service = await terminal('exec npm start', { ...env, DATA_DIR: './data-curve', PORT: String(servicePort), CHAIN_RPC_PORT: '0', CHAIN_PROGRAMS_DIR: curveProgramsDir!, WATCH_POLL_INTERVAL: '500ms' }, /\nsk_[A-Za-z0-9_-]{40,}\n/, 'npm start');
    const key = /\n(sk_[A-Za-z0-9_-]{40,})\n/.exec(service.output())![1]!;
    // The README's "KEY as before"; DATA_DIR as the service's, where npm run holder finds the URLs it serves on.
    const shell = session({ ...env, DATA_DIR: './data-curve' });
    expect((await shell.run(`KEY=${key}`)).status).toBe(0);
    const outputs: string[] = [];
    for (const code of blocks) {
      for (const command of commands(code)) {
        const { status, output } = await shell.run(command.replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `$1:${servicePort}`));
        if (status !== 0) throw new Error(`README.md curve walk: \`${command}\` exited ${status}:\n${output}`);
        outputs.push(output);
      }
    }
    const all = outputs.join('\n');
    expect(all).toMatch(/"kind":"bonding-curve"/);
    const bought = [...all.matchAll(/^bought (\d+) base units of \S+ for (\d+) lamports/gm)];
    expect(bought).toHaveLength(2);
    for (const [, tokens] of bought) expect(BigInt(tokens!) > 0n).toBe(true);
    expect(all).toMatch(/full: the service graduates it/);
    expect(all).toMatch(/"sources":\[\{"kind":"curve"/);
    const claim = /\{"claim":\{"signatures":\[("[^"]+")?/.exec(all);
    expect(claim?.[1]).toBeDefined();
  }, 240_000);
});

/** The "After the launch" walk needs the full launch's four programs: CHAIN_PROGRAMS_DIR (README "The full launch"); skipped cleanly without. */
const FULL_PROGRAMS = ['metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s', 'LocpQgucEQHbqNABEYvBvwoxCPsSbG91A1QaQhQQqjn', 'GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw', 'CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C'];
const haveFullPrograms = curveProgramsDir !== undefined && FULL_PROGRAMS.every((id) => existsSync(join(curveProgramsDir, `${id}.so`)));

describe.skipIf(!haveFullPrograms)(`the README's "After the launch" walk${haveFullPrograms ? '' : ' [skipped: needs CHAIN_PROGRAMS_DIR with Metaplex, Jupiter Lock, SPL Governance and Raydium CPMM]'}`, () => {
  it('runs as written: keypairs, a full launch with cliffUnlockPercent, a proposal, and a claim at the cliff that moves exactly the cliff share', async () => {
    const blocks = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/<!-- walk:full -->\n```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    expect(blocks).toHaveLength(1);
    const servicePort = await freePort();
    const env = walkEnv();
    const service = await terminal('exec npm start', { ...env, DATA_DIR: './data-full', PORT: String(servicePort), CHAIN_RPC_PORT: '0', CHAIN_PROGRAMS_DIR: curveProgramsDir! }, /\nsk_[A-Za-z0-9_-]{40,}\n/, 'npm start');
    const key = /\n(sk_[A-Za-z0-9_-]{40,})\n/.exec(service.output())![1]!;
    const shell = session({ ...env, DATA_DIR: './data-full' });
    expect((await shell.run(`KEY=${key}`)).status).toBe(0);
    const outputs: string[] = [];
    for (const command of commands(blocks[0]!)) {
      const { status, output } = await shell.run(command.replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `$1:${servicePort}`));
      if (status !== 0) throw new Error(`README.md "After the launch" walk: \`${command}\` exited ${status}:\n${output}`);
      outputs.push(output);
    }
    const all = outputs.join('\n');
    expect(all).toMatch(/^voted: \w+$/m);
    // 20 % of the 150 000 DDAO (6 decimals) in the escrow unlocks at the cliff, and the first claim moves exactly that.
    const claimed = /^claimed (\d+) base units: \w+$/m.exec(all);
    expect(claimed?.[1]).toBe('30000000000');
    const launchId = (await shell.run('echo $FULL')).output.trim();
    const launch = (await (await fetch(`http://127.0.0.1:${servicePort}/api/launches/${launchId}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { launch: { results: { vesting: { amount: string; schedule: { cliffUnlockAmount: string; amountPerPeriod: string } } } } };
    expect(launch.launch.results.vesting).toMatchObject({ amount: '150000000000', schedule: { cliffUnlockAmount: '30000000000', amountPerPeriod: '60000000000' } });
  }, 240_000);
});
