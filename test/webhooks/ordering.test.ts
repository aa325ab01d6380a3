import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { passLeaseTime } from '../support/database.js';
import { commitEvents, engineConfig, insertLaunch, startReceiver, type Receiver } from '../support/webhooks.js';
import { startEndpointHarness, type EndpointHarness } from './support/endpointHarness.js';

type Json = Record<string, any>;

const worker = fileURLToPath(new URL('./support/dispatchWorker.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** What an ordered endpoint's receiver saw of each request: the launch, the sequence, when it arrived (real ms) and when it was answered 2xx. */
interface Seen {
  launchId: string;
  sequence: number;
  arrived: number;
  answered?: number;
  status: number;
}

/** Records every request; `answer(seen, nth)` picks the status and delay (nth: how many times this event came before). */
function recordOrder(receiver: Receiver, answer: (s: Seen, nth: number) => { status: number; delayMs: number }): Seen[] {
  const log: Seen[] = [];
  receiver.respond = (req) => {
    const body = JSON.parse(req.body) as Json;
    const seen: Seen = { launchId: body.launchId as string, sequence: body.sequence as number, arrived: Date.now(), status: 0 };
    const nth = log.filter((s) => s.launchId === seen.launchId && s.sequence === seen.sequence).length;
    log.push(seen);
    const { status, delayMs } = answer(seen, nth);
    seen.status = status;
    setTimeout(() => (seen.answered = Date.now()), delayMs);
    return { status, delayMs };
  };
  return log;
}

/**
 * Each launch's requests came one at a time in sequence order: sorted by arrival, a launch's
 * sequences never go down, and each request arrived only after every earlier request of its launch
 * had been answered, the last of them with a success.
 */
function expectOrdered(log: readonly Seen[], launchId: string, sequences: number[]): void {
  const mine = log.filter((s) => s.launchId === launchId).sort((a, b) => a.arrived - b.arrived);
  expect([...new Set(mine.map((s) => s.sequence))], launchId).toEqual(sequences);
  for (let i = 1; i < mine.length; i++) {
    const prev = mine[i - 1]!;
    expect(mine[i]!.sequence, `${launchId} #${i}`).toBeGreaterThanOrEqual(prev.sequence);
    if (mine[i]!.sequence > prev.sequence) {
      expect(prev.status, `${launchId}: sequence ${mine[i]!.sequence} went out after a failed ${prev.sequence}`).toBe(200);
      expect(prev.answered, `${launchId}: sequence ${mine[i]!.sequence} went out before ${prev.sequence} was answered`).toBeDefined();
      expect(mine[i]!.arrived).toBeGreaterThanOrEqual(prev.answered!);
    }
  }
}

describe('ordered delivery: ordering "launch" (docs/webhooks.md, "Ordered delivery")', () => {
  const clock = manualClock(Date.UTC(2026, 5, 1, 12));
  let h: EndpointHarness;
  let receiver: Receiver;
  let launchReceiver: Receiver;
  beforeEach(async () => {
    h = await startEndpointHarness(clock, { retrySchedule: [0, 1_000, 2_000], maxInFlightPerHost: 8 });
    receiver = await startReceiver(clock, '/ordered');
    launchReceiver = await startReceiver(clock, '/launch');
  });
  afterEach(async () => {
    await h.close();
    await receiver.close();
    await launchReceiver.close();
  });

  it('sends one launch at a time in sequence order across a failing attempt, and holds neither other launches nor the launch URL', async () => {
    const endpoint = await h.createEndpoint({ url: receiver.url, ordering: 'launch' });
    expect(endpoint.ordering).toBe('launch');
    const a = await insertLaunch(h.tdb.db, clock, { url: launchReceiver.url, secret: 'whsec_ordering_launch_a', box: h.box });
    const b = await insertLaunch(h.tdb.db, clock, { url: launchReceiver.url, secret: 'whsec_ordering_launch_b', box: h.box });
    // A's second event fails once; every answer takes 15 ms, so a request sent early would overlap.
    const log = recordOrder(receiver, (s, nth) => ({ status: s.launchId === a && s.sequence === 2 && nth === 0 ? 500 : 200, delayMs: 15 }));
    await commitEvents(h.tdb.db, clock, a, 4, 'launch.step_complete');
    await commitEvents(h.tdb.db, clock, b, 3, 'launch.step_complete');
    await h.service.engine.dispatcher.drain();

    // A is held at its failed second event (waiting out its 1 s retry); B went through; the launch URL got all 7.
    expect(log.filter((s) => s.launchId === a).map((s) => s.sequence)).toEqual([1, 2]);
    expectOrdered(log, b, [1, 2, 3]);
    expect(launchReceiver.requests).toHaveLength(7);
    const held = await h.tdb.db.selectFrom('deliveries').select(['status', 'attempt_count']).where('endpoint_id', '=', endpoint.id).where('launch_id', '=', a).execute();
    expect(held.filter((d) => Number(d.attempt_count) === 0)).toHaveLength(2); // waiting is not an attempt

    clock.advance(1_000);
    await h.service.engine.dispatcher.drain();
    expectOrdered(log, a, [1, 2, 3, 4]);
    expect(log.filter((s) => s.launchId === a).map((s) => s.sequence)).toEqual([1, 2, 2, 3, 4]);
    const rows = await h.tdb.db.selectFrom('deliveries').select('status').where('endpoint_id', '=', endpoint.id).execute();
    expect(rows.every((d) => d.status === 'delivered')).toBe(true);
  });

  it('a given-up event lets the next one go; ordering is validated, shown and can be turned off', async () => {
    const endpoint = await h.createEndpoint({ url: receiver.url, ordering: 'launch' });
    const a = await insertLaunch(h.tdb.db, clock, { url: launchReceiver.url, secret: 'whsec_ordering_launch_c', box: h.box });
    const log = recordOrder(receiver, (s) => ({ status: s.sequence === 1 ? 500 : 200, delayMs: 1 }));
    await commitEvents(h.tdb.db, clock, a, 2, 'launch.step_complete');
    for (const step of [0, 1_000, 2_000]) {
      clock.advance(step);
      await h.service.engine.dispatcher.drain();
    }
    // Three failed attempts of the first (dead-lettered), then the second.
    expect(log.map((s) => s.sequence)).toEqual([1, 1, 1, 2]);

    for (const bad of ['sequence', 'LAUNCH', 1, true, {}]) {
      const res = await h.call('PATCH', `/webhook-endpoints/${endpoint.id}`, h.keys.acme, { ordering: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.details.fields.map((f: Json) => f.field)).toContain('ordering');
    }
    expect((await h.call('POST', '/webhook-endpoints', h.keys.acme, { url: receiver.url, ordering: 'fifo' })).status).toBe(400);
    const off = await h.call('PATCH', `/webhook-endpoints/${endpoint.id}`, h.keys.acme, { ordering: null });
    expect(off.body.endpoint.ordering).toBeNull();
    expect((await h.call('GET', `/webhook-endpoints/${endpoint.id}`, h.keys.acmeRead)).body.endpoint.ordering).toBeNull();
  });

  it('holds across a SIGKILL of the dispatcher process mid-attempt: the next event waits until the killed one is delivered by the next dispatcher', async () => {
    const endpoint = await h.createEndpoint({ url: receiver.url, ordering: 'launch' });
    const launchId = await insertLaunch(h.tdb.db, clock, { url: launchReceiver.url, secret: 'whsec_ordering_launch_k', box: h.box });
    // The second event's first answer takes long: the worker is killed while it is out.
    const log = recordOrder(receiver, (s, nth) => ({ status: 200, delayMs: s.sequence === 2 && nth === 0 ? 3_000 : 5 }));
    await commitEvents(h.tdb.db, clock, launchId, 5, 'launch.step_complete');
    await h.stopService(); // only the worker delivers

    const child = spawn(process.execPath, ['--import', 'tsx', worker], {
      cwd: repoRoot,
      env: { ...process.env, DB_PATH: h.tdb.path, SECRET_KEY: h.secretKey.toString('base64') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    const deadline = Date.now() + 20_000;
    while (!log.some((s) => s.sequence === 2)) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`worker made no progress: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 300)); // the worker keeps running while the second is out
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(log.map((s) => s.sequence)).toEqual([1, 2]); // nothing went out past the one in flight
    const leased = await h.tdb.db.selectFrom('deliveries').select(['lease_owner', 'status']).where('endpoint_id', '=', endpoint.id).where('lease_owner', 'is not', null).execute();
    expect(leased).toHaveLength(1); // the killed worker's lease on the second

    // A new dispatcher, once the dead worker's lease has expired, sends the second again, then the rest in order.
    clock.set(Date.now());
    await passLeaseTime(h.tdb.db, clock, 60_000);
    const engine = createWebhookEngine({ db: h.tdb.db, clock, logger: silentLogger(), config: engineConfig(), secretBox: h.box });
    await engine.dispatcher.drain();
    await engine.stop();
    expect(log.map((s) => s.sequence)).toEqual([1, 2, 2, 3, 4, 5]);
    // The killed worker's request for the second was never answered to it; the next one was, and only then did the third go.
    const [, , again, third] = log;
    expect(third!.arrived).toBeGreaterThanOrEqual(again!.answered!);
  });
});
