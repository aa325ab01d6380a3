import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { resolveClientAddress, parseTrustProxy, type TrustProxy } from '../../src/http/clientAddress.js';
import { loadConfig } from '../../src/config/config.js';
import { startTestService, type TestService } from '../support/service.js';

// The service behind a reverse proxy on 127.0.0.1 (TRUST_PROXY), over real HTTP: the proxy's
// connections come from 127.0.0.1 and name their callers in X-Forwarded-For; other loopback
// addresses (127.0.0.x) play callers reaching the service directly.
let t: TestService;
let server: ServerType;
let port: number;
const PROXY = '127.0.0.1';

beforeAll(async () => {
  t = await startTestService({
    env: { TRUST_PROXY: PROXY, RATE_LIMIT_PER_MINUTE: '1000000', DASHBOARD_SIGN_IN_PER_MINUTE: '3', HTTP_MAX_CONNECTIONS_PER_CLIENT: '2', EVENT_STREAMS_PER_KEY: '100', EVENT_STREAMS_PER_OWNER: '100' },
  });
  ({ server, port } = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { ...t.config.http, requestTimeoutMs: 60_000 } }));
});
afterAll(async () => {
  (server as import('node:http').Server).closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t?.close();
});

function send(method: string, path: string, options: { from: string; forwardedFor?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers, ...(options.forwardedFor ? { 'x-forwarded-for': options.forwardedFor } : {}) };
    const req = request({ host: '127.0.0.1', port, path, method, localAddress: options.from, headers, agent: false }, (res) => resolve({ status: res.statusCode ?? 0, req, res }));
    req.on('error', reject);
    req.end(options.body);
  });
}

async function signInFails(from: string, forwardedFor?: string): Promise<number> {
  const { status, res } = await send('POST', '/dashboard/sign-in', { from, forwardedFor, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'key=sk_wrongwrongwrong&_csrf=x' });
  res.resume();
  return status;
}

describe('TRUST_PROXY', () => {
  it('counts failed dashboard sign-ins per forwarded caller behind a trusted proxy, and per socket address otherwise', async () => {
    // Three failures of one caller behind the proxy fill its bucket ...
    for (let i = 0; i < 3; i++) expect(await signInFails(PROXY, '203.0.113.1')).toBe(403);
    expect(await signInFails(PROXY, '203.0.113.1')).toBe(429);
    // ... and not the next caller's, through the same proxy (old code: 429, everyone was 127.0.0.1).
    expect(await signInFails(PROXY, '203.0.113.2')).toBe(403);
    // A client's own X-Forwarded-For entries are not believed: only the hop the proxy appended counts.
    expect(await signInFails(PROXY, '198.51.100.9, 203.0.113.1')).toBe(429);
    // A caller that is not a trusted proxy cannot pick its bucket with the header.
    for (let i = 0; i < 3; i++) expect(await signInFails('127.0.0.7', `192.0.2.${i + 1}`)).toBe(403);
    expect(await signInFails('127.0.0.7', '192.0.2.99')).toBe(429);
  });

  it("caps the event streams of each forwarded caller, not the proxy's connections", async () => {
    const key = await t.key('acme', ['launches:read']);
    const open: Array<{ req: ClientRequest }> = [];
    const stream = async (forwardedFor: string) => {
      const r = await send('GET', '/api/events/stream', { from: PROXY, forwardedFor, headers: { authorization: `Bearer ${key}` } });
      open.push(r);
      if (r.status !== 200) r.res.resume();
      return r.status;
    };
    try {
      // HTTP_MAX_CONNECTIONS_PER_CLIENT is 2: two streams of one caller, the third refused ...
      expect(await stream('203.0.113.5')).toBe(200);
      expect(await stream('203.0.113.5')).toBe(200);
      const third = await send('GET', '/api/events/stream', { from: PROXY, forwardedFor: '203.0.113.5', headers: { authorization: `Bearer ${key}` } });
      open.push(third);
      expect(third.status).toBe(429);
      const body = await new Promise<string>((resolve) => {
        let text = '';
        third.res.on('data', (c: Buffer) => (text += c.toString()));
        third.res.on('end', () => resolve(text));
      });
      expect(JSON.parse(body)).toMatchObject({ error: { code: 'too_many_streams', details: { bound: 'address', limit: 2 } } });
      // ... while other callers behind the same proxy still get theirs (old code: the proxy's third connection was refused).
      expect(await stream('203.0.113.6')).toBe(200);
      expect(await stream('203.0.113.7')).toBe(200);
    } finally {
      for (const r of open) r.req.destroy();
    }
  });

  it('walks X-Forwarded-For from the right through trusted hops only, and refuses a bad setting by name', () => {
    const trust = parseTrustProxy('10.0.0.0/8, ::1') as TrustProxy;
    expect(resolveClientAddress('10.1.2.3', '1.1.1.1, 2.2.2.2, 10.9.9.9', trust)).toBe('2.2.2.2');
    expect(resolveClientAddress('::ffff:10.1.2.3', '2.2.2.2', trust)).toBe('2.2.2.2');
    expect(resolveClientAddress('::1', '2001:db8::1', trust)).toBe('2001:db8::1');
    expect(resolveClientAddress('8.8.8.8', '2.2.2.2', trust)).toBe('8.8.8.8');
    expect(resolveClientAddress('10.1.2.3', 'not-an-address', trust)).toBe('10.1.2.3');
    expect(resolveClientAddress('10.1.2.3', '2.2.2.2', parseTrustProxy('') as TrustProxy)).toBe('10.1.2.3');
    expect(() => loadConfig({ ...process.env, NODE_ENV: 'test', TRUST_PROXY: '10.0.0.0/99' })).toThrow(/TRUST_PROXY.*10\.0\.0\.0\/99/);
  });
});
