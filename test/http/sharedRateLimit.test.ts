import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createApp } from '../../src/http/app.js';
import type { AppEnv } from '../../src/http/env.js';
import { RateLimiter, SharedRateLimiter, createRateLimiter } from '../../src/http/middleware/rateLimit.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createTestDb, type TestDb } from '../support/webhooks.js';

// docs/architecture.md, SQLite and PostgreSQL: a rate limit holds across instances. Two apps (as two service instances would have) on
// one database, each with its own limiter object: together they admit the limit per window, not twice it.

const LIMIT = 60;

describe('rate limit shared by instances on one database', () => {
  let tdb: TestDb;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12, 0, 30));

  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => {
    await tdb.close();
  });

  function instance() {
    const routes = new Hono<AppEnv>();
    routes.get('/ping', (c) => c.json({ ok: true }));
    return createApp({ db: tdb.db, logger: silentLogger(), limiter: new SharedRateLimiter(LIMIT, tdb.db, clock, silentLogger()), bodyLimitBytes: 1024, routes: [['/t', routes]] });
  }

  it(`${LIMIT}/min through two instances: ${LIMIT} admitted in the window, the rest refused by either, the next window admits again`, async () => {
    const apps = [instance(), instance()];
    const { key } = await createApiKey(tdb.db, { owner: 'acme', scopes: ['launches:read'], now: clock.now() });
    const headers = { authorization: `Bearer ${key}` };
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 10; i++) {
      const res = await apps[i % 2]!.request('/api/t/ping', { headers });
      statuses.push(res.status);
      if (i === LIMIT - 1) expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      if (res.status === 429) {
        expect(res.headers.get('retry-after')).toBe('30'); // the window is aligned to the minute: 30 s left
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT).every((s) => s === 429)).toBe(true);
    // Another subject has its own budget.
    expect((await apps[0]!.request('/api/t/ping')).status).toBe(200);
    clock.advance(30_000);
    expect((await apps[1]!.request('/api/t/ping', { headers })).status).toBe(200);
    const windows = async () => (await tdb.db.selectFrom('rate_limit_windows').select(['window_start', 'count']).where('subject', '=', `key:${(await tdb.db.selectFrom('api_keys').select('id').executeTakeFirstOrThrow()).id}`).orderBy('window_start').execute()).map((r) => r.count);
    // The previous window stays (an instance whose clock is a little behind still counts into it)...
    expect(await windows()).toEqual([LIMIT + 10, 1]);
    clock.advance(60_000);
    expect((await apps[0]!.request('/api/t/ping', { headers })).status).toBe(200);
    // ...and is swept once it is two windows old.
    expect(await windows()).toEqual([1, 1]);
  });

  it('a peek (the health probe) answers from what this instance counted, without the database', async () => {
    const logs: string[] = [];
    const logger = { ...silentLogger(), warn: (_obj: unknown, msg?: string) => void logs.push(String(msg)) } as unknown as ReturnType<typeof silentLogger>;
    const limiter = new SharedRateLimiter(10, tdb.db, clock, logger);
    for (let i = 0; i < 3; i++) expect((await limiter.take('key:p')).allowed).toBe(true);
    await tdb.close();
    const verdict = await limiter.take('key:p', true);
    expect(verdict).toMatchObject({ allowed: true, remaining: 7 });
    expect(logs).toEqual([]);
    expect((await limiter.take('key:other', true)).remaining).toBe(10);
    tdb = await createTestDb(); // afterEach closes it
  });

  it('concurrent requests through both instances never admit more than the limit', async () => {
    const limiters = [0, 1].map(() => new SharedRateLimiter(10, tdb.db, clock, silentLogger()));
    const verdicts = await Promise.all(Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.take('key:k')));
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(10);
    expect((await limiters[0]!.take('key:k', true)).remaining).toBe(0);
  });

  it('a SQLite service counts in memory (one process owns the file); the shared limiter is the PostgreSQL one', () => {
    const limiter = createRateLimiter({ db: tdb.db, clock, logger: silentLogger(), limit: LIMIT });
    expect(limiter).toBeInstanceOf(process.env.TEST_DATABASE_URL ? SharedRateLimiter : RateLimiter);
  });
});
