import { request, type IncomingMessage } from 'node:http';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { startTestService, type TestService } from '../support/service.js';
import { signIn } from './support.js';

let t: TestService;
let server: ServerType;
let port: number;

beforeAll(async () => {
  t = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: '1000000', DASHBOARD_SIGN_IN_PER_MINUTE: '5' } });
  ({ server, port } = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 60_000, maxConnectionsPerClient: 0 } }));
});
afterAll(async () => {
  (server as import('node:http').Server).closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t?.close();
});

/** A form post from a given loopback address; resolves with the status, headers and page. */
function post(path: string, body: string, options: { from?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; headers: IncomingMessage['headers']; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', localAddress: options.from, headers: { 'content-type': 'application/x-www-form-urlencoded', ...options.headers } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A sign-in form's login cookie and CSRF token, as a browser gets them. */
async function loginForm(): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/dashboard/sign-in`);
  const login = /dash_login=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await res.text())?.[1] ?? '';
  return { cookie: `dash_login=${login}`, csrf };
}

/**
 * Streams up to `totalBytes` of form body in 1 MiB chunks (never more than one chunk in memory here)
 * and stops at the answer; resolves with the status and how much had been sent when it came.
 */
function streamLargeForm(path: string, totalBytes: number, declareLength: boolean): Promise<{ status: number; sentWhenAnswered: number }> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(1 << 20, 'a');
    let sent = 0;
    let answered = false;
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(declareLength ? { 'content-length': String(totalBytes) } : {}) },
    });
    req.on('response', (res) => {
      answered = true;
      const sentWhenAnswered = sent;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, sentWhenAnswered }));
      req.destroy();
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const pump = () => {
      while (!answered && sent < totalBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe('dashboard form bodies, sign-in and scopes', () => {
  it('answers 200 MB form posts to sign-in with 413 after reading at most the limit, in parallel, without taking the memory', async () => {
    const before = process.memoryUsage();
    const results = await Promise.all([
      streamLargeForm('/dashboard/sign-in', 200 << 20, false),
      streamLargeForm('/dashboard/sign-in', 200 << 20, false),
      streamLargeForm('/dashboard/sign-in', 200 << 20, true),
    ]);
    const after = process.memoryUsage();
    for (const r of results) {
      expect(r.status).toBe(413);
      // The answer came while most of the body was still unsent (the old parser read all 200 MB first).
      expect(r.sentWhenAnswered).toBeLessThan(32 << 20);
    }
    expect(after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers)).toBeLessThan(64 << 20);
    // A signed-in form post over the limit is refused the same way.
    const { cookie } = await signIn(t, await t.key('ops', ['admin']));
    const big = await post('/dashboard/breakers/reset', `host=${'x'.repeat(70_000)}`, { headers: { cookie }, from: '127.0.0.9' });
    expect(big.status).toBe(413);
    expect(big.text).toContain('larger than 65536 bytes');
  });

  it('refuses a dashboard post that is not a form with 415', async () => {
    const res = await post('/dashboard/sign-in', '{"key":"sk_x"}', { headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(415);
  });

  it('limits failed sign-ins per client address, before looking the key up', async () => {
    const valid = await t.key('acme', ['launches:read']);
    for (let i = 0; i < 5; i++) expect((await post('/dashboard/sign-in', `key=sk_wrong${i}xxxxxxxxxxxx&_csrf=x`, { from: '127.0.0.2' })).status).toBe(403);
    const limited = await post('/dashboard/sign-in', new URLSearchParams({ key: valid, _csrf: 'x' }).toString(), { from: '127.0.0.2' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.text).toContain('Too many sign-in attempts');
    // Another address is not held back.
    expect((await post('/dashboard/sign-in', `key=sk_other&_csrf=x`, { from: '127.0.2.1' })).status).toBe(403);
  });

  it('never locks a key\'s holder out: others\' failures at the key\'s first 12 characters, malformed or well-formed, from many addresses, do not count against it', async () => {
    const valid = await t.key('acme', ['launches:read']);
    const prefix = valid.slice(0, 12);
    for (let i = 0; i < 6; i++) {
      const from = `127.0.4.${i + 1}`;
      // No CSRF token at all, then a wrong one, then a well-formed form (its own login cookie and token) with a wrong key.
      expect((await post('/dashboard/sign-in', `key=${prefix}wrong${i}`, { from })).status).toBe(403);
      expect((await post('/dashboard/sign-in', `key=${prefix}wrong${i}&_csrf=x`, { from })).status).toBe(403);
      const { cookie, csrf } = await loginForm();
      expect((await post('/dashboard/sign-in', new URLSearchParams({ key: `${prefix}${'x'.repeat(valid.length - 12)}`, _csrf: csrf }).toString(), { from, headers: { cookie } })).status).toBe(401);
    }
    const { cookie, csrf } = await loginForm();
    const holder = await post('/dashboard/sign-in', new URLSearchParams({ key: valid, _csrf: csrf }).toString(), { from: '127.0.5.1', headers: { cookie } });
    expect(holder.status).toBe(303);
    expect(holder.headers.location).toBe('/dashboard');
    expect(String(holder.headers['set-cookie'])).toContain('dash_session=');
  });

  it('refuses a key that cannot read launches, and a session of such a key shows nothing', async () => {
    const writeOnly = await t.key('acme', ['launches:write']);
    const form = await t.request('/dashboard/sign-in');
    const login = /dash_login=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1] ?? '';
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
    const res = await t.request('/dashboard/sign-in', {
      method: 'POST',
      headers: { cookie: `dash_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key: writeOnly, _csrf: csrf }).toString(),
    });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('launches:read');
    expect(res.headers.getSetCookie().some((c) => c.startsWith('dash_session='))).toBe(false);

    // A session such a key holds anyway (created before this check) opens no page.
    const { createSession } = await import('../../src/dashboard/session.js');
    const row = await t.service.db.selectFrom('api_keys').select('id').where('scopes', '=', 'launches:write').executeTakeFirstOrThrow();
    const token = await createSession(t.service.db, { keyId: row.id, now: Date.now(), ttlMs: 3600_000 });
    const page = await t.request('/dashboard/launches', { headers: { cookie: `dash_session=${token}` } });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/dashboard/sign-in');
  });
});
