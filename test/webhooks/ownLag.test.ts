import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startLoopLagMonitor, type LoopLag } from '../../src/lib/loopLag.js';
import { createBreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import { createWebhookHttpClient, type AttemptOutcome, type WebhookHttpClient } from '../../src/webhooks/httpClient.js';
import { createTestDb, type TestDb } from '../support/webhooks.js';

/** Keeps this thread busy, as a saturated event loop would be. */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

const request = { body: '{"id":"evt_1"}', headers: { 'content-type': 'application/json' } };

describe("attempts are not blamed on a receiver for the service's own lag", () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function listen(server: Server | NetServer): Promise<string> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }

  function client(timeoutMs: number, loopLag?: LoopLag): WebhookHttpClient {
    const c = createWebhookHttpClient({ timeoutMs, guard: false, loopLag, lagToleranceMs: 200 });
    closers.push(() => c.close());
    return c;
  }

  it('starts the attempt timeout when the request is written, not when it was queued behind a busy loop', async () => {
    const server = createHttpServer((_req, res) => res.end('ok'));
    const url = await listen(server);
    const sent = client(400).send({ url, ...request });
    stall(600); // longer than the timeout, before the request could even be written
    const outcome = await sent;
    expect(outcome).toMatchObject({ ok: true, statusCode: 200 });
  });

  it('retries at once on a fresh connection when the loop stalled while the attempt was out and it failed, and the answer counts', async () => {
    const lag = startLoopLagMonitor({ intervalMs: 10 });
    closers.push(async () => lag.stop());
    let requests = 0;
    const server = createHttpServer((_req, res) => {
      requests += 1;
      // The first request gets no answer, and this process stalls while it is out.
      if (requests === 1) setImmediate(() => stall(700));
      else res.end('ok');
    });
    const url = await listen(server);
    const outcome = await client(400, lag).send({ url, ...request });
    expect(outcome).toMatchObject({ ok: true, statusCode: 200 });
    expect(requests).toBe(2);
  });

  it('does not send again after a stall when the sender says it may not (its lease ran out meanwhile): one request, a failure of its own', async () => {
    const lag = startLoopLagMonitor({ intervalMs: 10 });
    closers.push(async () => lag.stop());
    let requests = 0;
    const server = createHttpServer(() => {
      requests += 1;
      if (requests === 1) setImmediate(() => stall(700));
    });
    const url = await listen(server);
    let asked = 0;
    const outcome = await client(400, lag).send({ url, ...request, mayResend: () => (asked++, false) });
    expect(asked).toBe(1);
    expect(requests).toBe(1);
    expect(outcome).toMatchObject({ ok: false, errorClass: 'service_lagging', serviceFault: true });
  });

  it('an answer that arrived while this process stalled past the deadline counts, once, even without a lag monitor: the deadline gives the stall back', async () => {
    // Timers run before the I/O that arrived meanwhile: without the give-back, the deadline's timer
    // fired first after the stall and the answer already in the socket became a timeout.
    for (const status of [200, 500, 302]) {
      let requests = 0;
      const server = createHttpServer((_req, res) => {
        requests += 1;
        res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {}).end('answer');
        setImmediate(() => stall(700)); // the answer is on its way; this process stalls before it can read it
      });
      const url = await listen(server);
      const outcome = await client(400).send({ url, ...request });
      expect(outcome.statusCode).toBe(status);
      expect(outcome.errorClass).toBe(status === 200 ? null : status === 500 ? 'http_status' : 'redirect');
      expect(requests).toBe(1);
    }
  });

  it("marks a failure during a stall as the service's own, and the breaker does not count it", async () => {
    const lag = startLoopLagMonitor({ intervalMs: 10 });
    closers.push(async () => lag.stop());
    // Answers nothing, so both the attempt and its immediate retry time out while we stall.
    const server = createHttpServer(() => setImmediate(() => stall(500)));
    const url = await listen(server);
    const outcome = await client(300, lag).send({ url, ...request });
    expect(outcome).toMatchObject({ ok: false, errorClass: 'service_lagging', serviceFault: true });

    const tdb: TestDb = await createTestDb();
    closers.push(() => tdb.close());
    const breakers = createBreakerRegistry({ db: tdb.db, clock: manualClock(0), logger: silentLogger(), policy: { failureThreshold: 1, resetTimeoutMs: 60_000 } });
    closers.push(async () => breakers.shutdown());
    await breakers.load();
    await breakers.execute('127.0.0.1', false, async () => outcome);
    expect(breakers.stateOf('127.0.0.1')).toEqual({ state: 'closed', failures: 0 });
    const receiverFault: AttemptOutcome = { ...outcome, errorClass: 'timeout', serviceFault: undefined };
    await breakers.execute('127.0.0.1', false, async () => receiverFault);
    expect(breakers.stateOf('127.0.0.1').state).toBe('open');
  });

  it('sends again on a fresh connection when a pooled keep-alive socket turns out to be closed', async () => {
    // Answers the first request of each connection and drops the connection at the second one, as
    // a receiver does when it closes an idle keep-alive socket just as we reuse it.
    let dropped = 0;
    const server = createNetServer((socket) => {
      let seen = 0;
      let buffered = '';
      socket.on('data', (chunk) => {
        buffered += chunk.toString('latin1');
        if (!buffered.includes('\r\n\r\n')) return;
        buffered = '';
        seen += 1;
        if (seen === 1) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
        else {
          dropped += 1;
          socket.destroy();
        }
      });
    });
    const url = await listen(server);
    const c = client(2_000);
    const outcomes = [];
    for (let i = 0; i < 4; i++) outcomes.push(await c.send({ url, ...request }));
    expect(dropped).toBeGreaterThan(0); // a pooled socket was reused and turned out closed
    expect(outcomes.map((o) => o.statusCode)).toEqual([200, 200, 200, 200]);
  });
});
