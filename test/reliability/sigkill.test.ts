import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PublicKey } from '@solana/web3.js';
import { getAccount, getAssociatedTokenAddressSync, getMint, TOKEN_2022_PROGRAM_ID } from '@solana/spl-token';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { launchBody } from '../support/fixtures.js';
import { onPostgres } from '../support/database.js';
import { startServiceBackend } from './support/backend.js';
import { startChildService } from './support/childService.js';
import { startRecordingReceiver } from './support/recordingReceiver.js';

// Fewer rounds in the PostgreSQL half, which runs this again (SIGKILL_KILLS overrides either).
const KILLS = Number(process.env.SIGKILL_KILLS ?? (onPostgres ? 2 : 4));
const LAUNCHES_PER_ROUND = 3;
const MAX_IN_FLIGHT = 16;
const SECRET = 'whsec_sigkill_0123456789abcdef';
// Each restart's clock is 10 minutes past the last one: every lease of the killed process has expired.
// (On PostgreSQL leases run on the server's clock: short ones that expire in real time instead, see support/backend.ts.)
const STEP_MS = 10 * 60_000;

const dir = mkdtempSync(join(tmpdir(), 'reliability-kill-'));
const baseEnv = {
  SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off', RATE_LIMIT_PER_MINUTE: '1000000',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT), WEBHOOK_POLL_INTERVAL_MS: '50ms', WEBHOOK_TIMEOUT_MS: '2s',
  // The first round (no clock offset) runs the chain on its own thread, the later ones in-process:
  // the kills hit both, and each restart switches over the same database.
  CHAIN_THREAD: 'on',
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

async function createLaunches(origin: string, key: string, webhookUrl: string, count: number, accepted: Array<{ id: string; body: Record<string, unknown> }>) {
  return Promise.allSettled(
    Array.from({ length: count }, async () => {
      const body = launchBody({ webhookUrl, webhookSecret: SECRET, totalSupply: String(random(1_000, 9_999_999)), decimals: random(0, 9) });
      const res = await request(`${origin}/api/launches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.body.json()) as { launch?: { id: string } };
      if (res.statusCode === 202 && json.launch) accepted.push({ id: json.launch.id, body });
    }),
  );
}

describe('SIGKILL loop', () => {
  it('loses no committed event, duplicates at most the in-flight attempts and mints exactly once per launch across repeated SIGKILLs', async () => {
    const opened = await startServiceBackend(dir, baseEnv);
    const { env } = opened;
    const offset = (round: number) => String(opened.postgres ? 0 : round * STEP_MS);
    const key = (await createApiKey(opened.db, { owner: 'chaos', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    const receiver = await startRecordingReceiver(() => random(0, 25));
    const accepted: Array<{ id: string; body: Record<string, unknown> }> = [];
    const killPoints: string[] = [];
    let interrupted = 0;
    try {
      for (let round = 0; round < KILLS; round++) {
        const svc = await startChildService({ ...env, CLOCK_OFFSET_MS: offset(round) });
        const before = accepted.length;
        const posts = createLaunches(svc.origin, key, receiver.url, LAUNCHES_PER_ROUND, accepted);
        // The kill comes once this round's first launch is accepted (its work has begun).
        for (let i = 0; accepted.length === before && i < 300; i++) await new Promise((r) => setTimeout(r, 20));
        // A random kill point: after a random number of further webhook requests, or a random time.
        const more = random(1, 15);
        const ms = random(50, 800);
        await Promise.race([receiver.waitFor(receiver.received.length + more), new Promise((r) => setTimeout(r, ms))]);
        killPoints.push(`round ${round}: after ${more} requests or ${ms} ms, ${receiver.received.length} received`);
        expect(await svc.kill('SIGKILL')).toBe('SIGKILL');
        await posts;
        const leased = await opened.db.selectFrom('deliveries').select('id').where('status', '=', 'pending').where('lease_owner', 'is not', null).execute();
        const running = await opened.db.selectFrom('launches').select('id').where('status', '!=', 'complete').execute();
        interrupted += leased.length + running.length;
      }
      // The kills hit work in progress (leased deliveries or unfinished launches), not an idle process.
      expect(interrupted, killPoints.join('; ')).toBeGreaterThan(0);

      const last = await startChildService({ ...env, CLOCK_OFFSET_MS: offset(KILLS) });
      const settled = async () => {
        const open = await opened.db.selectFrom('launches').select('id').where('status', '!=', 'complete').execute();
        const pending = await opened.db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute();
        return open.length === 0 && pending.length === 0;
      };
      const deadline = Date.now() + 30_000;
      while (!(await settled())) {
        if (Date.now() > deadline) throw new Error(`not settled in time; kill points: ${killPoints.join('; ')}`);
        await new Promise((r) => setTimeout(r, 100)); // the work happens in another process: poll its database
      }
      expect(await last.kill('SIGTERM')).toBe(0);

      // Every committed event was received at least once, signed; duplicates only from attempts in flight at a kill.
      // The launches' events (the owner's funding events go to its endpoints, of which it has none here).
      const events = await opened.db.selectFrom('outbox_events').select(['id', 'launch_id', 'sequence', 'event']).where('launch_id', 'like', 'lch_%').execute();
      const ids = receiver.received.map((r) => verifyWebhook<{ id: string }>(r.body, r.headers, SECRET, { toleranceSeconds: 86_400 }).payload.id);
      const unique = new Set(ids);
      expect(new Set(events.map((e) => e.id))).toEqual(unique);
      expect(ids.length - unique.size).toBeLessThanOrEqual(KILLS * MAX_IN_FLIGHT);
      expect((await opened.db.selectFrom('deliveries').select('status').execute()).every((d) => d.status === 'delivered')).toBe(true);

      // Every accepted launch completed, with exactly one mint holding exactly its supply.
      const launches = await opened.db.selectFrom('launches').select(['id', 'status', 'results']).execute();
      expect(accepted.length).toBeGreaterThanOrEqual(1);
      for (const a of accepted) expect(launches.map((l) => l.id)).toContain(a.id);
      expect(launches.every((l) => l.status === 'complete')).toBe(true);
      for (const l of launches) expect(events.filter((e) => e.launch_id === l.id && e.event === 'launch.complete')).toHaveLength(1);
      const mints = launches.map((l) => (JSON.parse(l.results) as { mint?: string }).mint);
      expect(new Set(mints).size).toBe(launches.length);
      const { conn, close: closeChain } = await opened.chainReader({ now: () => Date.now() + (KILLS + 1) * STEP_MS });
      for (const a of accepted) {
        const mint = new PublicKey(mints[launches.findIndex((l) => l.id === a.id)]!);
        const info = await getMint(conn, mint, 'confirmed', TOKEN_2022_PROGRAM_ID);
        const supply = BigInt(a.body.totalSupply as string) * 10n ** BigInt(a.body.decimals as number);
        expect(info.supply).toBe(supply); // a second mint-to would have doubled it
        const ata = getAssociatedTokenAddressSync(mint, new PublicKey(a.body.creator as string), false, TOKEN_2022_PROGRAM_ID);
        expect((await getAccount(conn, ata, 'confirmed', TOKEN_2022_PROGRAM_ID)).amount).toBe(supply);
      }
      await closeChain();
    } finally {
      await receiver.close();
      await opened.close();
    }
    // Four child processes start, launch, get killed and restart: on a busy 2-core machine that
    // alone takes most of a minute, so the bound is generous (it checks liveness, not speed).
  }, 180_000);
});
