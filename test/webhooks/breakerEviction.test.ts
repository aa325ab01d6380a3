import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createBreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import type { AttemptOutcome } from '../../src/webhooks/httpClient.js';
import { createTestDb, type TestDb } from '../support/webhooks.js';

const ok: AttemptOutcome = { ok: true, statusCode: 200, durationMs: 1, responseBody: '', errorClass: null, errorMessage: null };
const down: AttemptOutcome = { ok: false, statusCode: 503, durationMs: 1, responseBody: '', errorClass: 'http_status', errorMessage: 'receiver answered 503' };

describe('idle breaker state', () => {
  let tdb: TestDb;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  beforeEach(async () => {
    tdb = await createTestDb();
  });
  afterEach(async () => tdb.close());

  it('forgets closed, failure-free endpoints after a quiet while; keeps open and failing ones, and health still lists every breaker that matters', async () => {
    const breakers = createBreakerRegistry({ db: tdb.db, clock, logger: silentLogger(), policy: { failureThreshold: 3, resetTimeoutMs: 300_000 }, idleEvictMs: 600_000 });
    const run = (endpoint: string, outcome: AttemptOutcome) => breakers.execute(endpoint, false, async () => outcome);
    const recovered = 'https://recovered.example.com:443/h';
    const failing = 'https://flaky.example.com:443/h';
    const open = 'https://down.example.com:443/h';
    await run(recovered, down);
    await run(recovered, ok); // closed again with no failures: nothing left to remember
    await run(failing, down); // closed, one failure: the next two would open it
    for (let i = 0; i < 3; i++) await run(open, down);
    expect(breakers.list().map((b) => b.endpoint).sort()).toEqual([open, failing, recovered].sort());

    clock.advance(599_000);
    await breakers.refresh();
    expect(breakers.list()).toHaveLength(3); // not idle long enough yet

    clock.advance(61_000);
    await breakers.refresh();
    // The recovered endpoint is forgotten; the failing one keeps its count and the open one its state.
    expect(breakers.list().map((b) => [b.endpoint, b.state, b.failures]).sort()).toEqual(
      [
        [failing, 'closed', 1],
        [open, 'half-open', 3],
      ].sort(),
    );
    expect(breakers.snapshot()).toEqual({ 'flaky.example.com': { state: 'closed', failures: 1 }, 'down.example.com': { state: 'half-open', failures: 3 } });
    // A forgotten endpoint reads as closed and counts again from zero.
    expect(breakers.stateOf('recovered.example.com')).toEqual({ state: 'closed', failures: 0 });
    expect(breakers.admits(recovered)).toBe(true);
    // Its row (closed, no failures) stays in the database and is not read back into memory.
    breakers.invalidate();
    await breakers.load();
    expect(breakers.list().map((b) => b.endpoint)).not.toContain(recovered);
    // Failing again, it counts from zero on top of that row and opens after the threshold.
    for (let i = 0; i < 3; i++) await run(recovered, down);
    expect(breakers.admits(recovered)).toBe(false);
    await run(failing, down);
    await run(failing, down);
    expect(breakers.admits(failing)).toBe(false);
    breakers.shutdown();
  });
});
