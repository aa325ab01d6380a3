import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

// A NUL character (%00) in a path or query: PostgreSQL cannot compare text holding one, so these
// answered 500 on PostgreSQL (and 404 on SQLite). Runs in both halves of the suite.
describe('NUL characters in the URL', () => {
  let t: TestService;
  let key: string;
  beforeAll(async () => {
    t = await startTestService();
    key = await t.key('root', ['admin']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('are refused with 400 in the envelope on every kind of route, on either database', async () => {
    const paths = [
      '/api/launches/%00',
      '/api/launches/lch_%00abc/events',
      '/api/dead-letters/%00/retry',
      '/api/webhook-endpoints/%00',
      '/api/launches?status=%00',
      '/api/launches?limit=%00',
      '/api/health?probe=%00',
      '/dashboard/launches?owner=%00',
    ];
    for (const path of paths) {
      const method = path.endsWith('/retry') ? 'POST' : 'GET';
      const res = await t.request(path, { method, key });
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      const body = (await res.json()) as { error: { code: string; message: string; request_id?: string } };
      expect(body.error.code).toBe('invalid_request');
      expect(body.error.message).toMatch(/NUL/);
    }
    // Nothing else changed: an ordinary unknown id is still 404.
    expect((await t.request('/api/launches/lch_unknown', { key })).status).toBe(404);
  });
});
