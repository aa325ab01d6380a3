import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { createApp } from '../../src/http/app.js';
import type { AppEnv } from '../../src/http/env.js';
import { readJson } from '../../src/http/middleware/bodyGuards.js';
import { requireScope } from '../../src/http/middleware/auth.js';
import { RateLimiter } from '../../src/http/middleware/rateLimit.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';

async function setup(limit = 100) {
  const { db } = openDatabase(':memory:');
  await migrateToLatest(db);
  const clock = manualClock(Date.UTC(2026, 10, 22));
  const routes = new Hono<AppEnv>();
  routes.get('/boom', () => {
    throw new Error('secret stack detail at /srv/app.ts:12');
  });
  routes.post('/echo', async (c) => {
    requireScope(c, 'launches:write');
    return c.json({ got: await readJson(c) });
  });
  routes.get('/read', (c) => c.json({ auth: requireScope(c, 'launches:read') }));
  const app = createApp({ db, logger: silentLogger(), limiter: new RateLimiter(limit, clock), bodyLimitBytes: 1024, routes: [['/t', routes]] });
  const writer = (await createApiKey(db, { owner: 'acme', scopes: ['launches:write'], now: clock.now() })).key;
  const reader = (await createApiKey(db, { owner: 'acme', scopes: ['launches:read'], now: clock.now() })).key;
  return { app, clock, writer, reader, db };
}

async function envelope(res: Response): Promise<{ code: string; message: string; details?: any; docs_url?: string }> {
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(typeof body.error.code).toBe('string');
  expect(typeof body.error.message).toBe('string');
  return body.error;
}

describe('request tracing', () => {
  it('echoes a sane X-Request-ID, generates one when absent and replaces an insane one', async () => {
    const { app } = await setup();
    const echoed = await app.request('/api/t/read', { headers: { 'x-request-id': 'abc-123 trace' } });
    expect(echoed.headers.get('x-request-id')).toBe('abc-123 trace');
    expect(echoed.headers.get('service-api-version')).toBe('2026-10-01');
    const generated = await app.request('/api/t/read');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const tooLong = await app.request('/api/t/read', { headers: { 'x-request-id': 'x'.repeat(201) } });
    expect(tooLong.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const nonAscii = await app.request('/api/t/read', { headers: { 'x-request-id': 'caf\u00e9' } });
    expect(nonAscii.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const unknownPath = await app.request('/elsewhere', { headers: { 'x-request-id': 'kept' } });
    expect(unknownPath.headers.get('x-request-id')).toBe('kept');
  });
});

describe('error envelope', () => {
  it('gives every error status the envelope', async () => {
    const { app, writer, reader } = await setup();
    const post = (body: string, headers: Record<string, string>) => app.request('/api/t/echo', { method: 'POST', body, headers });

    const r400 = await post('{not json', { authorization: `Bearer ${writer}`, 'content-type': 'application/json' });
    expect(r400.status).toBe(400);
    expect((await envelope(r400)).code).toBe('invalid_request');

    const r401 = await app.request('/api/t/read');
    expect(r401.status).toBe(401);
    expect(r401.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await envelope(r401)).code).toBe('unauthorized');

    const bad = await app.request('/api/t/read', { headers: { authorization: 'Bearer sk_nope' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('x-ratelimit-limit')).toBe('100');

    const r403 = await post('{}', { authorization: `Bearer ${reader}`, 'content-type': 'application/json' });
    expect(r403.status).toBe(403);
    expect((await envelope(r403)).details).toEqual({ required_scope: 'launches:write' });

    const r404 = await app.request('/api/nothing/here');
    expect(r404.status).toBe(404);
    const e404 = await envelope(r404);
    expect(e404.code).toBe('not_found');
    expect(e404.docs_url).toMatch(/\/api\/openapi$/);

    const r405 = await app.request('/api/t/read', { method: 'DELETE', headers: { authorization: `Bearer ${reader}` } });
    expect(r405.status).toBe(405);
    expect(r405.headers.get('allow')).toBe('GET, HEAD');
    const e405 = await envelope(r405);
    expect(e405.code).toBe('method_not_allowed');
    expect(e405.message).toBe('DELETE is not allowed on /api/t/read; use GET or HEAD');
    const echo405 = await app.request('/api/t/echo', { method: 'PUT' });
    expect(echo405.headers.get('allow')).toBe('POST');

    const r413 = await post(JSON.stringify({ pad: 'x'.repeat(2000) }), { authorization: `Bearer ${writer}`, 'content-type': 'application/json' });
    expect(r413.status).toBe(413);
    expect((await envelope(r413)).code).toBe('payload_too_large');

    const r415 = await post('a=b', { authorization: `Bearer ${writer}`, 'content-type': 'application/x-www-form-urlencoded' });
    expect(r415.status).toBe(415);
    expect((await envelope(r415)).code).toBe('unsupported_media_type');

    const r500 = await app.request('/api/t/boom');
    expect(r500.status).toBe(500);
    const e500 = await envelope(r500);
    expect(e500.code).toBe('internal_error');
    expect(JSON.stringify(e500)).not.toContain('secret stack detail');
  });

  it('accepts a valid JSON body under the limit', async () => {
    const { app, writer } = await setup();
    const res = await app.request('/api/t/echo', {
      method: 'POST',
      body: JSON.stringify({ a: 1 }),
      headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { a: 1 } });
  });

  it('accepts the key in x-api-key too', async () => {
    const { app, reader } = await setup();
    const res = await app.request('/api/t/read', { headers: { 'x-api-key': reader } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).auth.owner).toBe('acme');
  });
});

describe('rate limiting', () => {
  it('sets X-RateLimit-* on every API response and answers 429 with Retry-After over the limit', async () => {
    const { app, clock, reader } = await setup(3);
    const get = () => app.request('/api/t/read', { headers: { authorization: `Bearer ${reader}` } });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get();
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('3');
      expect(res.headers.get('x-ratelimit-reset')).toBe('60');
      remaining.push(res.headers.get('x-ratelimit-remaining') ?? '');
    }
    expect(remaining).toEqual(['2', '1', '0']);
    clock.advance(15_000);
    const limited = await get();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('45');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await envelope(limited)).code).toBe('rate_limited');
    // Anonymous callers are limited per IP, separately from the key.
    expect((await app.request('/api/t/read')).status).toBe(401);
    clock.advance(45_000);
    expect((await get()).status).toBe(200);
  });
});
