import { connect, type Socket } from 'node:net';
import type { Http2Bindings, HttpBindings, ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { manualClock } from '../../src/lib/clock.js';
import type { BreakerRegistry } from '../../src/webhooks/breakerRegistry.js';
import { startTestService, type TestService } from '../support/service.js';
import { captureLogger } from '../support/webhooks.js';

/**
 * The health fast path (src/http/healthFastPath.ts) answers anonymous GET/HEAD /api/health in the
 * node:http listener. Each case sends the same raw request to two servers on one service: `app`
 * serves everything through Hono, `fast` has the fast path in front. The answers must be the same
 * bytes (but the Date line), and the fast server must not have called the app for them.
 */
interface Pair {
  t: TestService;
  clock: ReturnType<typeof manualClock>;
  lines: string[];
  app: { server: ServerType; port: number };
  fast: { server: ServerType; port: number };
  /** Requests the fast server handed to the app. */
  appCalls: () => number;
  close(): Promise<void>;
}

async function startPair(env: Record<string, string>, limits = { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 }): Promise<Pair> {
  const clock = manualClock(Date.now());
  const { logger, lines } = captureLogger();
  const t = await startTestService({ env, clock, logger });
  let calls = 0;
  const fetch = (request: Request, env: HttpBindings | Http2Bindings) => (calls++, t.service.app.fetch(request, env));
  const app = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits });
  const fast = await startHttpServer({ fetch, fastPath: t.service.fastPath, port: 0, hostname: '127.0.0.1', limits });
  return {
    t,
    clock,
    lines,
    app,
    fast,
    appCalls: () => calls,
    async close() {
      for (const s of [app.server, fast.server]) await new Promise((resolve) => s.close(resolve));
      await t.close().catch(() => undefined);
    },
  };
}

/** One request on its own connection, as raw bytes; resolves with the whole answer. */
function raw(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
    socket.write(`${head}\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
}

const withoutDate = (answer: string) => answer.replace(/^Date: .*\r\n/m, '');
const header = (answer: string, name: string) => new RegExp(`^${name}: (.*)\r$`, 'im').exec(answer)?.[1];
const body = (answer: string) => answer.slice(answer.indexOf('\r\n\r\n') + 4);

/** Sends `head` to both servers and returns the two answers (Date line removed). */
async function both(p: Pair, head: string): Promise<{ app: string; fast: string }> {
  return { app: withoutDate(await raw(p.app.port, head)), fast: withoutDate(await raw(p.fast.port, head)) };
}

/** The request log lines of `requestId`, without what differs between any two lines (time, duration). */
function requestLog(p: Pair, requestId: string): unknown[] {
  return p.lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.requestId === requestId && line.msg === 'request')
    .map(({ time: _time, durationMs, ...rest }) => ({ ...rest, durationMs: typeof durationMs }));
}

async function requestCount(p: Pair, labels: string): Promise<number> {
  const text = await (await p.t.service.app.request('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(`launch_service_http_requests_total{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('health fast path, development (everyone sees hosts)', () => {
  let p: Pair;
  beforeAll(async () => {
    p = await startPair({ RATE_LIMIT_PER_MINUTE: '50', LOG_LEVEL: 'debug' });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('answers GET and HEAD with the same bytes as the app, without calling it', async () => {
    for (const method of ['GET', 'HEAD']) {
      const { app, fast } = await both(p, `${method} /api/health HTTP/1.1\r\nX-Request-ID: probe-${method}`);
      expect(app).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(fast).toBe(app);
      expect(header(fast, 'x-request-id')).toBe(`probe-${method}`);
    }
    const get = await raw(p.fast.port, 'GET /api/health HTTP/1.1');
    expect(JSON.parse(body(get))).toMatchObject({ status: 'healthy' });
    expect(header(get, 'cache-control')).toBe('no-store');
    expect(p.appCalls()).toBe(0);
  });

  it('gives a request without a sane X-Request-ID a fresh UUID, as the app does', async () => {
    for (const supplied of ['', `\r\nX-Request-ID: ${'x'.repeat(201)}`, '\r\nX-Request-ID: caf\u00e9']) {
      for (const port of [p.app.port, p.fast.port]) {
        const answer = await raw(port, `GET /api/health HTTP/1.1${supplied}`);
        expect(header(answer, 'x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      }
    }
    expect(p.appCalls()).toBe(0);
  });

  it('shows the rate-limit budget the caller spent elsewhere, without spending it', async () => {
    for (let i = 0; i < 3; i++) expect(await raw(p.app.port, 'GET /api/openapi HTTP/1.1')).toMatch(/^HTTP\/1\.1 200/);
    const { app, fast } = await both(p, 'GET /api/health HTTP/1.1\r\nX-Request-ID: budget');
    expect(header(fast, 'x-ratelimit-remaining')).toBe('47');
    expect(fast).toBe(app);
    expect(header(await raw(p.app.port, 'GET /api/openapi HTTP/1.1'), 'x-ratelimit-remaining')).toBe('46');
  });

  it('counts the request in the metrics and logs it as the app does', async () => {
    const labels = 'method="GET",route="/api/health",status="200"';
    const before = await requestCount(p, labels);
    await raw(p.app.port, 'GET /api/health HTTP/1.1\r\nX-Request-ID: logged');
    expect(await requestCount(p, labels)).toBe(before + 1);
    await raw(p.fast.port, 'GET /api/health HTTP/1.1\r\nX-Request-ID: logged');
    expect(await requestCount(p, labels)).toBe(before + 2);
    const head = 'method="HEAD",route="/api/health",status="200"';
    const heads = await requestCount(p, head);
    await raw(p.fast.port, 'HEAD /api/health HTTP/1.1');
    expect(await requestCount(p, head)).toBe(heads + 1);
    const lines = requestLog(p, 'logged');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual(lines[0]);
    expect(lines[0]).toMatchObject({ level: 20, method: 'GET', path: '/api/health', status: 200 });
    expect(p.appCalls()).toBe(0);
  });

  it('hands anything else to the app: the %00 guard, a query, other methods and paths, credentials', async () => {
    const handed = [
      'GET /api/health?probe=%00 HTTP/1.1',
      'GET /api/health%00 HTTP/1.1',
      'GET /api/health?verbose=1 HTTP/1.1',
      'GET /api/health/ HTTP/1.1',
      'POST /api/health HTTP/1.1\r\nContent-Length: 0',
      'GET /api/health HTTP/1.1\r\nAuthorization: Bearer sk_unknown',
      'GET /api/health HTTP/1.1\r\nx-api-key: nonsense',
    ];
    for (const [i, head] of handed.entries()) {
      const calls = p.appCalls();
      const { app, fast } = await both(p, `${head}\r\nX-Request-ID: handed-${i}`);
      // Routes other than health spend the budget: one request apart.
      const spent = (answer: string) => answer.replace(/^x-ratelimit-remaining: .*$/m, '');
      expect(spent(fast)).toBe(spent(app));
      expect(p.appCalls()).toBe(calls + 1);
    }
    const nul = await raw(p.fast.port, 'GET /api/health?probe=%00 HTTP/1.1');
    expect(nul).toMatch(/^HTTP\/1\.1 400/);
    expect(JSON.parse(body(nul)).error.code).toBe('invalid_request');
    expect(await raw(p.fast.port, 'GET /api/health HTTP/1.1\r\nAuthorization: Bearer sk_unknown')).toMatch(/^HTTP\/1\.1 401/);
  });

  it('answers 503 with the same bytes once the database fails, and HEAD still 200', async () => {
    await p.t.service.db.destroy();
    p.clock.advance(p.t.config.healthCacheMs);
    const get = await both(p, 'GET /api/health HTTP/1.1\r\nX-Request-ID: down');
    expect(get.app).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(JSON.parse(body(get.app))).toMatchObject({ status: 'unhealthy', checks: { database: { status: 'fail' } } });
    expect(get.fast).toBe(get.app);
    const head = await both(p, 'HEAD /api/health HTTP/1.1\r\nX-Request-ID: down-head');
    expect(head.app).toMatch(/^HTTP\/1\.1 200/);
    expect(head.fast).toBe(head.app);
    // A failed probe is logged at info on both paths.
    const lines = requestLog(p, 'down');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual(lines[0]);
    expect(lines[0]).toMatchObject({ level: 30, status: 503 });
  });
});

describe('health fast path, production (anonymous callers see host labels)', () => {
  let p: Pair;
  let admin: string;
  beforeAll(async () => {
    p = await startPair({ NODE_ENV: 'production', CHAIN: 'embedded', RATE_LIMIT_PER_MINUTE: '1000000' }, { requestTimeoutMs: 5000, maxConnectionsPerClient: 3 });
    admin = await p.t.key('ops', ['admin']);
    const now = p.clock.now();
    for (const endpoint of ['https://hooks.acme-customer.example/a', 'https://relay.globex.example:8443/x']) {
      await p.t.service.db.insertInto('endpoint_breakers').values({ endpoint, host: new URL(endpoint).host, state: 'open', failures: 3, opened_at: now, updated_at: now }).execute();
    }
    await (p.t.service.breakers as BreakerRegistry).load();
  });
  afterAll(async () => {
    await p?.close();
  });

  it('answers an anonymous caller with labels, the same bytes as the app', async () => {
    const { app, fast } = await both(p, 'GET /api/health HTTP/1.1\r\nX-Request-ID: anonymous');
    expect(fast).toBe(app);
    expect(body(fast)).not.toMatch(/acme-customer|globex/);
    expect(Object.keys(JSON.parse(body(fast)).circuitBreakers)).toEqual([expect.stringMatching(/^host-[0-9a-f]{12}$/), expect.stringMatching(/^host-[0-9a-f]{12}$/)]);
    expect(p.appCalls()).toBe(0);
  });

  it('hands an admin to the app, which shows the hosts', async () => {
    const { app, fast } = await both(p, `GET /api/health HTTP/1.1\r\nAuthorization: Bearer ${admin}\r\nX-Request-ID: admin`);
    expect(fast).toBe(app);
    expect(Object.keys(JSON.parse(body(fast)).circuitBreakers).sort()).toEqual(['hooks.acme-customer.example', 'relay.globex.example:8443']);
    expect(p.appCalls()).toBe(1);
  });

  it('keeps the per-client connection cap in front of the fast path', async () => {
    // The server's side of each connection, to wait until it has counted a close.
    const accepted: Socket[] = [];
    const onConnection = (socket: Socket) => accepted.push(socket);
    p.fast.server.on('connection', onConnection);
    const held = await Promise.all([0, 1, 2].map(() => new Promise<Socket>((resolve) => {
      const s = connect(p.fast.port, '127.0.0.1', () => resolve(s));
    })));
    const refused = await raw(p.fast.port, 'GET /api/health HTTP/1.1');
    expect(refused).toMatch(/^HTTP\/1\.1 429/);
    expect(refused).toContain('"code":"rate_limited"');
    const counted = accepted.slice(0, 3).map((socket) => new Promise((resolve) => socket.once('close', resolve)));
    for (const s of held) s.destroy();
    await Promise.all(counted);
    p.fast.server.off('connection', onConnection);
    expect(await raw(p.fast.port, 'GET /api/health HTTP/1.1')).toMatch(/^HTTP\/1\.1 200/);
  });
});
