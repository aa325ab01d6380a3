import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { launchBody } from '../support/fixtures.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'launch-offline-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The start line names every program; a CPMM launch's refusal names those it needs, without the bonding-curve programs. */
const withoutCurvePrograms = (line: string) =>
  line.replace(`, Meteora Dynamic Bonding Curve (${DEFAULT_PROGRAM_IDS.curve}), Meteora DAMM v2 (${DEFAULT_PROGRAM_IDS.amm})`, '');

/** A 127.0.0.1 port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the service with a clone source it cannot reach (offline)', () => {
  it('starts, serves health, logs one line naming the programs and both ways to provide them, and refuses a full launch with the same words', async () => {
    const source = `http://127.0.0.1:${await closedPort()}`;
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'app', 'main.ts')], {
      cwd: root,
      env: { ...process.env, DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', CHAIN_RPC_PORT: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'info', NODE_ENV: 'development', CHAIN_CLONE_FROM: source },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const warned = new Promise<void>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        lines.push(line);
        if (line.includes('could not fetch them')) resolve();
      });
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setInterval(() => {
          const listening = lines.find((l) => l.includes('launch service listening'));
          if (listening) {
            clearInterval(timer);
            resolve((JSON.parse(listening) as { port: number }).port);
          }
        }, 20);
        void exited.then(() => reject(new Error(`service exited: ${stderr}`)));
      });
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/api/health`)).status).toBe(200);
      await warned;
      const key = lines.find((l) => /^sk_[A-Za-z0-9_-]{40,}$/.test(l));
      expect(key).toBeDefined();

      const res = await fetch(`${base}/api/launches`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(
          launchBody({
            tokenStandard: 'spl-token',
            allocations: { creator: 20, vesting: 15, treasury: 35, pool: 30 },
            vesting: { beneficiary: '11111111111111111111111111111112', cliffSeconds: 60, periodSeconds: 60, periods: 10 },
            dao: { name: 'Offline DAO', votingPeriodSeconds: 3600, quorumPercent: 10 },
            pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '1' },
          }),
        ),
      });
      expect(res.status).toBe(422);
      const { error } = (await res.json()) as { error: { code: string; message: string; details: { missing: Array<{ programId: string }> } } };
      expect(error.code).toBe('chain_capability_missing');
      expect(error.details.missing.map((m) => m.programId)).toEqual([DEFAULT_PROGRAM_IDS.tokenMetadata, DEFAULT_PROGRAM_IDS.vesting, DEFAULT_PROGRAM_IDS.governance, DEFAULT_PROGRAM_IDS.pool]);
      expect(error.message).toContain('CHAIN_PROGRAMS_DIR');
      expect(error.message).toContain('CHAIN_CLONE_FROM');
      expect(error.message).not.toContain('\n');

      const warnings = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown }).filter((l) => l.level >= 40);
      expect(warnings).toHaveLength(1); // the launch came within the pause after the failed fetch: no second attempt, no second line
      expect(error.message).toBe(withoutCurvePrograms(warnings[0]!.msg)); // the same words, as the README promises, naming what this launch needs
      expect(warnings[0]!.err).toBeUndefined();
      for (const id of Object.values(DEFAULT_PROGRAM_IDS)) expect(warnings[0]!.msg).toContain(id);
      expect(warnings[0]!.msg).toContain(`could not fetch them from ${source} (ECONNREFUSED)`);
      expect(warnings[0]!.msg).toContain('CHAIN_PROGRAMS_DIR');
      expect(lines.join('\n')).not.toMatch(/\n\s+at /); // no stack trace anywhere
      expect(stderr).toBe('');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('with CHAIN_CLONE_FROM=off, logs at start one line naming the programs and both ways to provide them, and refuses a full launch with that same line', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'app', 'main.ts')], {
      cwd: root,
      env: { ...process.env, DATA_DIR: join(dir, 'off'), PORT: '0', HOST: '127.0.0.1', CHAIN_RPC_PORT: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'info', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off', CHAIN_PROGRAMS_DIR: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          lines.push(line);
          if (line.includes('launch service listening')) resolve((JSON.parse(line) as { port: number }).port);
        });
        void exited.then(() => reject(new Error(`service exited: ${stderr}`)));
      });
      const warnings = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 40);
      expect(warnings).toHaveLength(1);
      const line = warnings[0]!.msg;
      for (const id of Object.values(DEFAULT_PROGRAM_IDS)) expect(line).toContain(id);
      expect(line).toMatch(/^the embedded chain lacks .*; provide them with CHAIN_PROGRAMS_DIR \(a directory of <programId>\.so files\) or CHAIN_CLONE_FROM \(a reachable cluster to fetch them from\)$/);

      const key = lines.find((l) => /^sk_[A-Za-z0-9_-]{40,}$/.test(l));
      const res = await fetch(`http://127.0.0.1:${port}/api/launches/quote`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(
          launchBody({
            tokenStandard: 'spl-token',
            allocations: { creator: 20, vesting: 15, treasury: 35, pool: 30 },
            vesting: { beneficiary: '11111111111111111111111111111112', cliffSeconds: 60, periodSeconds: 60, periods: 10 },
            dao: { name: 'Offline DAO', votingPeriodSeconds: 3600, quorumPercent: 10 },
            pool: { quoteMint: 'So11111111111111111111111111111111111111112', quoteAmount: '1' },
          }),
        ),
      });
      expect(res.status).toBe(422);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('chain_capability_missing');
      expect(error.message).toBe(withoutCurvePrograms(line));
      expect(stderr).toBe('');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
