import type { ServerType } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.js';
import { createRateLimiter } from '../../src/http/middleware/rateLimit.js';
import { createEventStreamRoutes } from '../../src/http/routes/eventStream.js';
import { startHttpServer } from '../../src/http/server.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createEventFeed } from '../../src/webhooks/stream/eventFeed.js';
import { TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { commitEvents } from '../support/webhooks.js';
import { openEventStream, type OpenStream } from './support/sseClient.js';

/** `GET /api/events/stream` (docs/api.md, "Event stream") over real HTTP on a running service. */
let t: TestService;
let server: ServerType;
let base: string;
let acme: string;
let globex: string;
const streams: OpenStream[] = [];
const limits = { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 };

beforeEach(async () => {
  t = await startTestService();
  t.service.start();
  const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits });
  server = listening.server;
  base = `http://127.0.0.1:${listening.port}`;
  acme = await t.key('acme', ['launches:read', 'launches:write']);
  globex = await t.key('globex', ['launches:read', 'launches:write']);
  // Each owner's funding wallet is made (and airdropped: a funding event) before any stream opens.
  for (const key of [acme, globex]) expect((await t.request('/api/funding', { key })).status).toBe(200);
  await waitForDeposits(['own_acme', 'own_globex']);
});

/** Waits until the airdrop deposit of each of these owners' wallets is in the outbox. */
async function waitForDeposits(keys: string[]): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const rows = await t.service.db.selectFrom('outbox_events').select('launch_id').where('launch_id', 'in', keys).where('event', '=', 'funding.deposit_received').execute();
    if (new Set(rows.map((r) => r.launch_id)).size === keys.length) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no deposit events for ${keys.join(', ')}`);
}

afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

async function open(key: string, options: { lastEventId?: string; events?: string } = {}, at = base): Promise<OpenStream> {
  const stream = await openEventStream(at, key, options);
  streams.push(stream);
  return stream;
}

/** The launch's events as `GET /api/launches/:id/events` lists them, once it is complete. */
async function completedEvents(key: string, launchId: string): Promise<Array<{ id: string; event: string; payload: unknown }>> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const res = await t.request(`/api/launches/${launchId}/events`, { key });
    const { events } = (await res.json()) as { events: Array<{ id: string; event: string; payload: unknown }> };
    if (events.at(-1)?.event === 'launch.complete') return events;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`launch ${launchId} did not complete`);
}

describe('the event stream', () => {
  it("streams the caller's events in outbox order, each with its event id, and never another owner's", async () => {
    const stream = await open(acme);
    const theirs = await t.createLaunch(globex);
    const ours = await t.createLaunch(acme);
    const got = await stream.take(TOKEN_LAUNCH_EVENTS.length);
    const listed = await completedEvents(acme, ours);
    expect(got.map((e) => e.id)).toEqual(listed.map((e) => e.id));
    expect(got.map((e) => JSON.parse(e.data) as unknown)).toEqual(listed.map((e) => e.payload));
    expect(got.map((e) => (JSON.parse(e.data) as { event: string }).event)).toEqual(TOKEN_LAUNCH_EVENTS);
    await completedEvents(globex, theirs);
    // Everything globex's launch recorded has committed: none of it reaches acme's stream.
    expect(await stream.drain(300)).toEqual([]);
  });

  it("includes the owner's funding events (no launch), and never another owner's", async () => {
    const initech = await t.key('initech', ['launches:read', 'launches:write']);
    const stream = await open(initech);
    const theirs = await open(globex);
    expect((await t.request('/api/funding', { key: initech })).status).toBe(200);
    const [got] = await stream.take(1);
    const envelope = JSON.parse(got!.data) as { event: string; launchId: string | null; data: { address: string } };
    expect(envelope).toMatchObject({ event: 'funding.deposit_received', launchId: null });
    const wallet = ((await (await t.request('/api/funding', { key: initech })).json()) as { funding: { address: string } }).funding.address;
    expect(envelope.data.address).toBe(wallet);
    expect(await theirs.drain(300)).toEqual([]);
  });

  it('resumes exactly after Last-Event-ID, from the outbox, so a dropped connection loses nothing', async () => {
    const first = await open(acme);
    const launchId = await t.createLaunch(acme);
    const before = await first.take(2);
    first.close();
    const listed = await completedEvents(acme, launchId);
    const resumed = await open(acme, { lastEventId: before[1]!.id });
    const after = await resumed.take(listed.length - 2);
    expect([...before, ...after].map((e) => e.id)).toEqual(listed.map((e) => e.id));
    expect(await resumed.drain(300)).toEqual([]);
  });

  it('filters by event kind with ?events=', async () => {
    const stream = await open(acme, { events: 'launch.step_complete,launch.complete' });
    const launchId = await t.createLaunch(acme);
    const got = await stream.take(4);
    expect(got.map((e) => (JSON.parse(e.data) as { event: string }).event)).toEqual(['launch.step_complete', 'launch.step_complete', 'launch.step_complete', 'launch.complete']);
    const listed = await completedEvents(acme, launchId);
    expect(got.map((e) => e.id)).toEqual(listed.filter((e) => e.event === 'launch.step_complete' || e.event === 'launch.complete').map((e) => e.id));
  });

  it('refuses a missing key, a key without launches:read, a bad filter and a Last-Event-ID that is not one of your events', async () => {
    const theirs = await t.createLaunch(globex);
    const [theirEvent] = (await completedEvents(globex, theirs)).map((e) => e.id);
    const writeOnly = await t.key('acme', ['launches:write']);
    const noKey = await fetch(`${base}/api/events/stream`);
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    const cases: Array<[string, { lastEventId?: string; events?: string }, number, string]> = [
      [writeOnly, {}, 403, 'forbidden'],
      [acme, { events: 'launch.nope' }, 400, 'invalid_request'],
      [acme, { lastEventId: theirEvent! }, 400, 'invalid_request'],
      [acme, { lastEventId: 'evt_unknown' }, 400, 'invalid_request'],
    ];
    for (const [key, options, status, code] of cases) {
      const answer = await open(key, options);
      expect(answer.status).toBe(status);
      expect((answer.json as { error: { code: string } }).error.code).toBe(code);
    }
  });
});

describe('the event stream between events', () => {
  it('sends a heartbeat comment, wakes on a new event without waiting for its poll, and ends when the feed closes', async () => {
    const feed = createEventFeed();
    const app = createApp({
      db: t.service.db,
      logger: silentLogger(),
      limiter: createRateLimiter({ db: t.service.db, clock: systemClock, logger: silentLogger(), limit: 1000 }),
      bodyLimitBytes: 65_536,
      // A poll far longer than the test: only the feed's wake-up can bring the event in time.
      routes: [['/', createEventStreamRoutes({ db: t.service.db, feed, timing: { pollMs: 600_000, heartbeatMs: 150 } })]],
    });
    const listening = await startHttpServer({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', limits });
    try {
      const launchId = await t.createLaunch(acme);
      await completedEvents(acme, launchId);
      const stream = await open(acme, {}, `http://127.0.0.1:${listening.port}`);
      expect(await stream.comment()).toBe('stream open');
      expect(await stream.comment(3_000)).toBe('heartbeat');
      const [id] = await commitEvents(t.service.db, systemClock, launchId, 1);
      feed.wake();
      const got = await stream.take(1, 3_000);
      expect(got.map((e) => e.id)).toEqual([id]);
      feed.close();
      await expect(stream.take(1, 3_000)).rejects.toThrow('stream ended');
    } finally {
      feed.close();
      await new Promise((resolve) => listening.server.close(resolve));
    }
  });

  it('holds 30 streams waiting on one feed without a MaxListenersExceededWarning; a wake reaches each and the close ends each', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const feed = createEventFeed();
    const app = createApp({
      db: t.service.db,
      logger: silentLogger(),
      limiter: createRateLimiter({ db: t.service.db, clock: systemClock, logger: silentLogger(), limit: 1000 }),
      bodyLimitBytes: 65_536,
      routes: [['/', createEventStreamRoutes({ db: t.service.db, feed, timing: { pollMs: 600_000 }, limits: { perKey: 100, perOwner: 100, max: 100 } })]],
    });
    const listening = await startHttpServer({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', limits });
    try {
      const launchId = await t.createLaunch(acme);
      await completedEvents(acme, launchId);
      const at = `http://127.0.0.1:${listening.port}`;
      const many = await Promise.all(Array.from({ length: 30 }, () => open(acme, {}, at)));
      for (const stream of many) expect(await stream.comment()).toBe('stream open');
      // Every stream waits on the feed (the poll is far longer than the test): one wake, every stream reads the event.
      const [id] = await commitEvents(t.service.db, systemClock, launchId, 1);
      feed.wake();
      for (const stream of many) expect((await stream.take(1, 5_000)).map((e) => e.id)).toEqual([id]);
      feed.close();
      for (const stream of many) await expect(stream.take(1, 5_000)).rejects.toThrow('stream ended');
      // A warning is emitted on the next tick; let it arrive before looking.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      feed.close();
      await new Promise((resolve) => listening.server.close(resolve));
    }
  });
});
