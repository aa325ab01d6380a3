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
import { startServiceBackend } from './support/backend.js';
import { startChildService, type ChildService } from './support/childService.js';
import { startRecordingReceiver } from './support/recordingReceiver.js';

const LAUNCHES = 6;
const MAX_IN_FLIGHT = 16;
const SECRET = 'whsec_sigstop_0123456789abcdef';
const RUNNER_LEASE_MS = 2000;
const WEBHOOK_TIMEOUT_MS = 1000;
// The dispatcher leases an attempt for at least its timeout + 5 s (src/webhooks/engine.ts).
const DELIVERY_LEASE_MS = Math.max(2000, WEBHOOK_TIMEOUT_MS + 5000);
// Frozen longer than both leases: on SIGCONT every lease the process holds has expired.
const FREEZE_MS = Math.max(3 * RUNNER_LEASE_MS, DELIVERY_LEASE_MS) + 2000;

const dir = mkdtempSync(join(tmpdir(), 'reliability-stop-'));
const baseEnv = {
  SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off', RATE_LIMIT_PER_MINUTE: '1000000',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT), WEBHOOK_POLL_INTERVAL_MS: '50ms',
  WEBHOOK_TIMEOUT_MS: `${WEBHOOK_TIMEOUT_MS}ms`, WEBHOOK_LEASE_MS: '2s', RUNNER_LEASE_MS: `${RUNNER_LEASE_MS}ms`, CHAIN_RPC_PORT: 'off',
  // The chain on its own thread: frozen with the rest of the process, every lease expired on SIGCONT.
  CHAIN_THREAD: 'on',
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SIGSTOP past the leases', () => {
  it('completes every launch, reports no step twice and loses no event after the service is frozen longer than its leases', async () => {
    // SQLite, or in the PostgreSQL half a database on the test server and a chain process (support/backend.ts).
    const opened = await startServiceBackend(dir, baseEnv);
    const { env } = opened;
    const key = (await createApiKey(opened.db, { owner: 'chaos', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    // Answers after up to 300 ms, so attempts are in flight when the process freezes.
    const receiver = await startRecordingReceiver(() => random(0, 300));
    const accepted: Array<{ id: string; body: Record<string, unknown> }> = [];
    let svc: ChildService | undefined;
    let stopped = false;
    try {
      svc = await startChildService(env);
      const pid = svc.child.pid!;
      await Promise.all(
        Array.from({ length: LAUNCHES }, async () => {
          const body = launchBody({ webhookUrl: receiver.url, webhookSecret: SECRET, totalSupply: String(random(1_000, 9_999_999)), decimals: random(0, 9) });
          const res = await request(`${svc!.origin}/api/launches`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
          const json = (await res.body.json()) as { launch?: { id: string } };
          expect(res.statusCode).toBe(202);
          accepted.push({ id: json.launch!.id, body });
        }),
      );

      // Freeze mid-flight: some deliveries sent, launches still running.
      await Promise.race([receiver.waitFor(LAUNCHES + 2), sleep(3000)]);
      process.kill(pid, 'SIGSTOP');
      stopped = true;
      await sleep(500); // requests already on the wire when it froze still arrive
      const frozenAt = receiver.received.length;
      const running = await opened.db.selectFrom('launches').select('id').where('status', '!=', 'complete').execute();
      const leased = await opened.db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute();
      await sleep(FREEZE_MS - 500);
      // Nothing moves while it is frozen.
      expect(receiver.received.length).toBe(frozenAt);
      process.kill(pid, 'SIGCONT');
      stopped = false;
      // The freeze hit work in progress, not an idle process.
      expect(running.length, 'launches running at the freeze').toBeGreaterThan(0);
      expect(leased.length + running.length).toBeGreaterThan(0);

      const settled = async () => {
        const open = await opened.db.selectFrom('launches').select('id').where('status', 'not in', ['complete', 'failed']).execute();
        const pending = await opened.db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute();
        return open.length === 0 && pending.length === 0;
      };
      const deadline = Date.now() + 60_000;
      while (!(await settled())) {
        if (Date.now() > deadline) throw new Error('not settled in time after SIGCONT');
        await sleep(100); // the work happens in another process: poll its database
      }
      expect(await svc.kill('SIGTERM')).toBe(0);

      // Every launch complete, one launch.complete and one step_complete event per step.
      const launches = await opened.db.selectFrom('launches').select(['id', 'status', 'results']).execute();
      expect(launches.map((l) => l.id).sort()).toEqual(accepted.map((a) => a.id).sort());
      expect(launches.map((l) => l.status)).toEqual(launches.map(() => 'complete'));
      // The launches' events (the owner's funding events go to its endpoints, of which it has none here).
      const events = (await opened.db.selectFrom('outbox_events').select(['id', 'launch_id', 'event', 'body']).execute()).filter((e) => e.launch_id.startsWith('lch_'));
      const stepOf = (body: string) => (JSON.parse(body) as { data: { step: string } }).data.step;
      for (const l of launches) {
        expect(events.filter((e) => e.launch_id === l.id && e.event === 'launch.complete')).toHaveLength(1);
        const steps = events.filter((e) => e.launch_id === l.id && e.event === 'launch.step_complete').map((e) => stepOf(e.body));
        expect(steps).toHaveLength(3);
        expect(new Set(steps).size).toBe(steps.length);
      }

      // Every committed event received, signed; a step never under two event ids; resends only of attempts in flight.
      const payloads = receiver.received.map((r) => verifyWebhook<{ id: string; event: string; launchId: string; data: { step?: string } }>(r.body, r.headers, SECRET, { toleranceSeconds: 86_400 }).payload);
      const unique = new Map(payloads.map((p) => [p.id, p]));
      expect(new Set(unique.keys())).toEqual(new Set(events.map((e) => e.id)));
      const stepIds = new Map<string, Set<string>>();
      for (const p of unique.values()) {
        if (p.event !== 'launch.step_complete') continue;
        const k = `${p.launchId}/${p.data.step}`;
        stepIds.set(k, (stepIds.get(k) ?? new Set()).add(p.id));
      }
      expect(stepIds.size).toBe(launches.length * 3);
      for (const [k, ids] of stepIds) expect(ids.size, k).toBe(1);
      expect(payloads.length - unique.size).toBeLessThanOrEqual(MAX_IN_FLIGHT);
      expect((await opened.db.selectFrom('deliveries').select('status').execute()).every((d) => d.status === 'delivered')).toBe(true);
      expect(await opened.db.selectFrom('dead_letters').select('id').execute()).toHaveLength(0);

      // One mint per launch, holding exactly its supply (a second mint-to would have doubled it).
      const mints = launches.map((l) => (JSON.parse(l.results) as { mint?: string }).mint);
      expect(new Set(mints).size).toBe(launches.length);
      const { conn, close: closeChain } = await opened.chainReader();
      for (const a of accepted) {
        const mint = new PublicKey(mints[launches.findIndex((l) => l.id === a.id)]!);
        const supply = BigInt(a.body.totalSupply as string) * 10n ** BigInt(a.body.decimals as number);
        expect((await getMint(conn, mint, 'confirmed', TOKEN_2022_PROGRAM_ID)).supply).toBe(supply);
        const ata = getAssociatedTokenAddressSync(mint, new PublicKey(a.body.creator as string), false, TOKEN_2022_PROGRAM_ID);
        expect((await getAccount(conn, ata, 'confirmed', TOKEN_2022_PROGRAM_ID)).amount).toBe(supply);
      }
      await closeChain();
    } finally {
      if (svc && svc.child.exitCode === null && svc.child.signalCode === null) {
        if (stopped) process.kill(svc.child.pid!, 'SIGCONT');
        await svc.kill('SIGKILL');
      }
      await receiver.close();
      await opened.close();
    }
    // One child process, an 8 s freeze and six launches (about 12 s here): generous for a busy 2-core machine.
  }, 180_000);
});
