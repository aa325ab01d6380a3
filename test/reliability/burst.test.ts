import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { onPostgres } from '../support/database.js';
import { launchBody } from '../support/fixtures.js';
import { startServiceBackend } from './support/backend.js';
import { startChildService, type ChildService } from './support/childService.js';
import { sampleCpu, type CpuSampler } from './support/cpuSampler.js';
import { createHealthProbe, wallNow, type ProbeResult } from './support/healthProbe.js';
import { startRecordingReceiver } from './support/recordingReceiver.js';

// Sized for the suite: a burst of launches, each with 6 events, against a receiver that answers at once
// (about 10 s on two idle cores; BURST_LAUNCHES overrides it). The PostgreSQL half, which runs it
// again on a database server and a chain process, sends fewer.
const LAUNCHES = Number(process.env.BURST_LAUNCHES ?? (onPostgres ? 60 : 200));
const PARALLEL = 8;
const MAX_IN_FLIGHT = 64; // the shipped default
const SECRET = 'whsec_burst_0123456789abcdef';
// The restart's clock is past every lease of the killed process (SQLite; on PostgreSQL leases run on
// the server's clock, and short ones expire in real time instead, see support/backend.ts).
const STEP_MS = 10 * 60_000;
const HEALTH_BOUND_MS = 2_000;
/**
 * Health must answer within HEALTH_BOUND_MS of wall time whenever the service's event loop got at
 * least MIN_CPU_SHARE of the CPU time it asked for (time on a core / (that + time waiting on the run
 * queue), from /proc/<pid>/schedstat). Below that the machine, not the service, sets the latency (a
 * shared 2-core box at load 20 gave it 10-15 %); then the wall bound is reported, not asserted. On
 * every run, whatever the load, the service may spend at most HEALTH_BOUND_MS × MIN_CPU_SHARE (1 s)
 * of its own CPU on other work while a health request waits: the same promise in the service's CPU
 * time, which a starved machine cannot inflate (a wait spent off the cores costs the service no CPU).
 */
const MIN_CPU_SHARE = 0.5;
const CPU_BOUND_MS = HEALTH_BOUND_MS * MIN_CPU_SHARE;

const dir = mkdtempSync(join(tmpdir(), 'reliability-burst-'));
const baseEnv = {
  SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent', NODE_ENV: 'development', CHAIN_CLONE_FROM: 'off', RATE_LIMIT_PER_MINUTE: '1000000',
  // One owner sends the whole burst: its in-flight bound (docs/api.md, Bounds) is not what this measures.
  MAX_LAUNCHES_IN_FLIGHT_PER_OWNER: '100000',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const p99 = (values: number[]) => [...values].sort((x, y) => x - y)[Math.max(0, Math.ceil(values.length * 0.99) - 1)] ?? Number.NaN;

/** Health in one phase: wall latency, the service's CPU while each request waited, the share of the CPU it asked for that it got. */
function healthPhase(probe: ProbeResult, cpu: CpuSampler, from: number, to: number) {
  const cpuWaits = probe.windows.map((w) => cpu.cpuBetween(w.start, w.end));
  return { n: probe.samples.length, p50: Math.round(probe.p(50)), p99: Math.round(probe.p(99)), max: Math.round(probe.max()), cpuWaitP99: Math.round(p99(cpuWaits)), share: Math.round(cpu.grantedBetween(from, to) * 100) / 100 };
}

/** A phase's health bounds: in CPU time always (where /proc exists), in wall time when the machine gave the service its share. */
function expectHealthy(name: string, phase: ReturnType<typeof healthPhase>, cpu: CpuSampler, summary: unknown): void {
  const context = `${name}: ${JSON.stringify(summary)}`;
  if (cpu.available) expect(phase.cpuWaitP99, context).toBeLessThan(CPU_BOUND_MS);
  if (!cpu.available || phase.share >= MIN_CPU_SHARE) expect(phase.p99, context).toBeLessThan(HEALTH_BOUND_MS);
  else console.warn(`burst: ${name}, wall-clock p99 not asserted: the service got ${Math.round(phase.share * 100)}% of the CPU time it asked for: ${context}`);
}

/** Posts launches `PARALLEL` at a time until `count` are accepted or the service stops answering. */
async function postLaunches(svc: ChildService, key: string, webhookUrl: string, count: number, accepted: string[], killed: () => boolean = () => false): Promise<void> {
  let next = 0;
  let down = false;
  const worker = async () => {
    while (!down && next < count) {
      next += 1;
      try {
        const res = await request(`${svc.origin}/api/launches`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(launchBody({ webhookUrl, webhookSecret: SECRET })),
        });
        const json = (await res.body.json()) as { launch?: { id: string } };
        if (res.statusCode !== 202 || !json.launch) throw new Error(`create answered ${res.statusCode}`);
        accepted.push(json.launch.id);
      } catch (error) {
        if (!killed()) throw error;
        down = true; // killed under us: the rest of the burst goes to the restarted process
        next -= 1;
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

describe('a burst of launches', () => {
  it('delivers everything with no failed attempt or open breaker, keeps health under 2 s, and answers health within 2 s of a restart after SIGKILL', async () => {
    const opened = await startServiceBackend(dir, baseEnv);
    const { env } = opened;
    const key = (await createApiKey(opened.db, { owner: 'burst', scopes: ['launches:write', 'launches:read'], now: Date.now() })).key;
    const receiver = await startRecordingReceiver(() => 0);
    const accepted: string[] = [];
    try {
      // 1. The burst, killed with SIGKILL once a third of its deliveries have been received.
      const burstProbe = await createHealthProbe();
      const drainProbe = await createHealthProbe();
      const first = await startChildService(env);
      const firstCpu = sampleCpu(first.child.pid);
      burstProbe.start(first.origin);
      const burstStart = wallNow();
      let killed = false;
      const posting = postLaunches(first, key, receiver.url, LAUNCHES, accepted, () => killed);
      await Promise.race([receiver.waitFor(LAUNCHES * 2), posting]);
      const during = await burstProbe.stop();
      const burstEnd = wallNow();
      firstCpu.stop();
      killed = true;
      expect(await first.kill('SIGKILL')).toBe('SIGKILL');
      await posting;
      // The deliveries in flight at the kill: leased, not settled. Only these may arrive twice.
      const leased = await opened.db.selectFrom('deliveries').select(['id', 'event_id']).where('status', '=', 'pending').where('lease_owner', 'is not', null).execute();

      // 2. Restart on the same data: health first, then the rest of the burst while the backlog drains.
      const spawnedAt = wallNow();
      const second = await startChildService({ ...env, CLOCK_OFFSET_MS: String(opened.postgres ? 0 : STEP_MS) });
      const portOpenAt = wallNow();
      const secondCpu = sampleCpu(second.child.pid);
      drainProbe.start(second.origin);
      const firstAnswer = await drainProbe.firstAnswer;
      await postLaunches(second, key, receiver.url, LAUNCHES - accepted.length, accepted);
      const settled = async () => {
        const open = await opened.db.selectFrom('launches').select('id').where('status', '!=', 'complete').execute();
        const pending = await opened.db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute();
        return open.length === 0 && pending.length === 0;
      };
      const deadline = Date.now() + 90_000;
      while (!(await settled())) {
        if (Date.now() > deadline) throw new Error('the backlog did not drain in 90 s');
        await new Promise((r) => setTimeout(r, 100)); // the work happens in another process: poll its database
      }
      const draining = await drainProbe.stop();
      const drainEnd = wallNow();
      secondCpu.stop();
      expect(await second.kill('SIGTERM')).toBe(0);

      const burst = healthPhase(during, firstCpu, burstStart, burstEnd);
      const drain = healthPhase(draining, secondCpu, portOpenAt, drainEnd);
      const startup = {
        spawnToPortMs: Math.round(portOpenAt - spawnedAt),
        firstAnswerMs: Math.round(firstAnswer - portOpenAt),
        cpuMs: Math.round(secondCpu.cpuBetween(portOpenAt, firstAnswer)),
        share: Math.round(secondCpu.grantedBetween(portOpenAt, firstAnswer) * 100) / 100,
      };
      const summary = { accepted: accepted.length, leasedAtKill: leased.length, restart: startup, burst, drain };
      console.info(`burst: ${JSON.stringify(summary)}`);

      // Health: p99 under 2 s during the burst; after the restart, answered within 2 s of the port
      // opening and never slower than 2 s while the backlog drained (each bound as expectHealthy says).
      expect(during.samples.length, JSON.stringify(summary)).toBeGreaterThan(3);
      expectHealthy('during the burst', burst, firstCpu, summary);
      if (secondCpu.available) expect(startup.cpuMs, JSON.stringify(summary)).toBeLessThan(CPU_BOUND_MS);
      if (!secondCpu.available || startup.share >= MIN_CPU_SHARE) expect(startup.firstAnswerMs, JSON.stringify(summary)).toBeLessThan(HEALTH_BOUND_MS);
      else if (startup.firstAnswerMs >= HEALTH_BOUND_MS) console.warn(`burst: first answer after the restart ${startup.firstAnswerMs} ms, not asserted: the service got ${Math.round(startup.share * 100)}% of the CPU time it asked for`);
      expectHealthy('while the backlog drained', drain, secondCpu, summary);
      expect([...during.statuses, ...draining.statuses].every((s) => s === 200), JSON.stringify(summary)).toBe(true);

      // Delivery: no attempt failed (so no breaker could open), every event arrived, duplicates only
      // from attempts in flight at the kill.
      const failed = await opened.db.selectFrom('delivery_attempts').select(['error_class', 'error_message']).where('outcome', '=', 'failure').execute();
      expect(failed, JSON.stringify(summary)).toEqual([]);
      const breakers = await opened.db.selectFrom('endpoint_breakers').selectAll().execute();
      expect(breakers.filter((b) => b.state !== 'closed' || b.failures > 0)).toEqual([]);
      // The launches' events (the owner's funding events go to its endpoints, of which it has none here).
      const events = await opened.db.selectFrom('outbox_events').select('id').where('launch_id', 'like', 'lch_%').execute();
      const ids = receiver.received.map((r) => verifyWebhook<{ id: string }>(r.body, r.headers, SECRET, { toleranceSeconds: 86_400 }).payload.id);
      const unique = new Set(ids);
      expect(unique).toEqual(new Set(events.map((e) => e.id)));
      const copies = new Map<string, number>();
      for (const id of ids) copies.set(id, (copies.get(id) ?? 0) + 1);
      const inFlight = new Set(leased.map((d) => d.event_id));
      const duplicated = [...copies].filter(([, n]) => n > 1);
      expect(duplicated.filter(([id, n]) => !inFlight.has(id) || n > 2), JSON.stringify({ duplicated, leasedAtKill: leased.length })).toEqual([]);
      expect(accepted).toHaveLength(LAUNCHES);
      const launches = await opened.db.selectFrom('launches').select('status').execute();
      expect(launches.every((l) => l.status === 'complete')).toBe(true);
    } finally {
      await receiver.close();
      await opened.close();
    }
  }, 240_000);
});
