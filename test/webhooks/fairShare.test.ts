import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';

type Json = Record<string, any>;

/** How long owner A's receivers take to answer 200: slow, but never a failure, so no breaker opens. */
const SLOW_MS = 5_000;
const MAX_IN_FLIGHT = 16;
/** What one owner may send at once: WEBHOOK_MAX_IN_FLIGHT less a quarter (the default). */
const OWNER_SHARE = MAX_IN_FLIGHT - MAX_IN_FLIGHT / 4;
const A_ENDPOINTS = 12;
const A_LAUNCHES = 3;

let t: TestService;
let slow: Receiver[] = [];
let aLaunchReceiver: Receiver;
let fast: Receiver;

beforeAll(async () => {
  slow = await Promise.all(Array.from({ length: A_ENDPOINTS }, () => startReceiver(systemClock, '/a')));
  aLaunchReceiver = await startReceiver(systemClock, '/a-launch');
  for (const r of [...slow, aLaunchReceiver]) r.respond = () => ({ status: 200, body: 'ok', delayMs: SLOW_MS });
  fast = await startReceiver(systemClock, '/b');
  t = await startTestService({
    env: {
      WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      WEBHOOK_MAX_IN_FLIGHT_PER_HOST: '8',
      WEBHOOK_TIMEOUT_MS: '20s',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      RATE_LIMIT_PER_MINUTE: '100000',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([...slow, aLaunchReceiver, fast].filter(Boolean).map((r) => r.close()));
});

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('delivery slots shared by owner, through the running service', () => {
  it("owner B's launch.complete arrives within 2 s while owner A keeps its share of the slots busy with slow receivers", async () => {
    const acme = await t.key('acme', ['launches:write', 'launches:read']);
    const globex = await t.key('globex', ['launches:write', 'launches:read']);
    for (const r of slow) {
      const res = await t.request('/api/webhook-endpoints', { method: 'POST', key: acme, json: { url: r.url, events: ['*'] } });
      expect(res.status).toBe(201);
    }
    t.service.start();
    for (let i = 0; i < A_LAUNCHES; i++) await t.createLaunch(acme, launchBody({ webhookUrl: aLaunchReceiver.url }));
    const aRequests = () => [...slow, aLaunchReceiver].flatMap((r) => r.requests);
    /** A's requests the receivers were still answering at time `at`. */
    const aOpenAt = (at: number) => aRequests().filter((q) => q.at <= at && at < q.at + SLOW_MS).length;

    // A's slots are busy, and its first answers came back (so A has been at it for a while).
    await until(() => aRequests().length > 0, "A's first request");
    const aStarted = Math.min(...aRequests().map((q) => q.at));
    await until(() => Date.now() > aStarted + SLOW_MS + 1_000 && aOpenAt(Date.now()) >= OWNER_SHARE - 4, 'A to keep its slots busy', 90_000);

    await t.createLaunch(globex, launchBody({ webhookUrl: fast.url }));
    const complete = () => fast.requests.find((q) => (JSON.parse(q.body) as Json).event === 'launch.complete');
    await until(() => complete() !== undefined, "B's launch.complete", 90_000);
    const got = complete()!;
    const latency = got.at - Date.parse((JSON.parse(got.body) as Json).timestamp as string);
    expect(latency).toBeLessThan(2_000);

    // A was still sending when B's event went out, and had work left: B did not just wait A out.
    expect(aOpenAt(got.at)).toBeGreaterThanOrEqual(OWNER_SHARE - 4);
    const aDeliveries = await t.service.db.selectFrom('deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('owner', '=', 'acme').where('status', '=', 'pending').executeTakeFirstOrThrow();
    expect(Number(aDeliveries.n)).toBeGreaterThan(0);
    // And A never had more than its share out at once.
    const peak = Math.max(...aRequests().map((q) => aOpenAt(q.at)));
    expect(peak).toBeLessThanOrEqual(OWNER_SHARE);
  }, 240_000);
});
