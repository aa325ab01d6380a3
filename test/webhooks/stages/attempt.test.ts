import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { verifyWebhook } from '../../../packages/webhooks/src/index.js';
import { createBreakerRegistry } from '../../../src/webhooks/breakerRegistry.js';
import { createAttempter, type AttemptItem } from '../../../src/webhooks/dispatch/attempt.js';
import { contextOf } from '../../../src/webhooks/dispatch/deliveryContext.js';
import { createEndpointPace } from '../../../src/webhooks/endpointPace.js';
import { createWebhookHttpClient } from '../../../src/webhooks/httpClient.js';
import { createTestDb, newSecretBox, startReceiver, type Receiver, type TestDb } from '../../support/webhooks.js';

/**
 * The attempt stage alone: a real HTTP client to a real receiver on 127.0.0.1, a real breaker
 * registry on the test database. It signs, sends through the breaker and reports the outcome; it
 * writes no delivery state (the settle batcher does).
 */
describe('attempt (dispatch/attempt.ts)', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
  });
  afterEach(async () => {
    await receiver.close();
    await tdb.close();
  });

  function setup() {
    const breakers = createBreakerRegistry({ db: tdb.db, clock, logger: silentLogger(), policy: { failureThreshold: 2, resetTimeoutMs: 300_000 } });
    const pace = createEndpointPace(8);
    const client = createWebhookHttpClient({ timeoutMs: 2_000, guard: false });
    const attempter = createAttempter({ db: tdb.db, owner: 'dsp_test', clock, logger: silentLogger(), box, client, breakers, pace, leaseMs: 30_000 });
    return { breakers, attempter, client };
  }

  function item(secretSealed: string): AttemptItem {
    const body = JSON.stringify({ id: 'evt_1', event: 'launch.step_complete', data: { n: 1 } });
    const ctx = contextOf({ id: 'dlv_1', launch_id: 'lch_1', endpoint_id: null, owner: 'own1', event_id: 'evt_1', event: 'launch.step_complete', sequence: 3, body, request_id: 'req_1', webhook_secret_enc: secretSealed, secret_enc: null, signature_scheme: null, previous_secret_enc: null, previous_secret_expires_at: null, rate_limit_per_second: null })!;
    return { id: 'dlv_1', launchId: 'lch_1', eventId: 'evt_1', url: receiver.url, host: new URL(receiver.url).host, endpoint: receiver.url, attempt: 2, token: 7, leaseExpiresAt: clock.now() + 30_000, ctx, trial: false };
  }

  it('sends the stored body signed afresh with the launch secret, the attempt number and request id in the headers', async () => {
    const { attempter, breakers, client } = setup();
    await breakers.load();
    const outcome = await attempter.send(item(box.seal('whsec_a')), clock.now());
    expect(outcome).toMatchObject({ ok: true, statusCode: 200 });
    const [req] = receiver.requests;
    expect(req!.body).toBe(item('x').ctx.body);
    expect(req!.headers['x-request-id']).toBe('req_1');
    expect(req!.headers['x-service-attempt']).toBe('2');
    const verified = verifyWebhook(req!.body, req!.headers as Record<string, string>, 'whsec_a', { now: clock.now() });
    expect((verified.payload as { id: string }).id).toBe('evt_1');
    expect(() => verifyWebhook(req!.body, req!.headers as Record<string, string>, 'whsec_other', { now: clock.now() })).toThrow();
    breakers.shutdown();
    await client.close();
  });

  it('fails as secret_unavailable without sending when the secret cannot be opened, and does not count it against the breaker', async () => {
    const { attempter, breakers, client } = setup();
    await breakers.load();
    for (let i = 0; i < 3; i++) {
      const outcome = await attempter.send(item('not-a-sealed-secret'), clock.now());
      expect(outcome.errorClass).toBe('secret_unavailable');
    }
    expect(receiver.requests).toHaveLength(0);
    expect(breakers.admits(receiver.url)).toBe(true);
    breakers.shutdown();
    await client.close();
  });

  it('opens the endpoint\'s breaker after its threshold of 5xx answers', async () => {
    const { attempter, breakers, client } = setup();
    await breakers.load();
    receiver.respond = () => ({ status: 503 });
    for (let i = 0; i < 2; i++) expect((await attempter.send(item(box.seal('s')), clock.now())).statusCode).toBe(503);
    expect(receiver.requests).toHaveLength(2);
    expect(breakers.admits(receiver.url)).toBe(false);
    breakers.shutdown();
    await client.close();
  });
});
