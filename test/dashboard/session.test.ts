import { describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/auth/apiKeys.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestService } from '../support/service.js';
import { signIn } from './support.js';

describe('dashboard sessions', () => {
  it('end when they expire, when the key is revoked, and store only a hash of the token', async () => {
    const clock = manualClock(Date.now());
    const t = await startTestService({ clock, env: { DASHBOARD_SESSION_TTL: '1h' } });
    try {
      const created = await t.key('root', ['admin']);
      const { cookie, setCookie } = await signIn(t, created);
      expect(setCookie).toMatch(/HttpOnly/);
      expect(setCookie).toMatch(/SameSite=Strict/);
      expect(setCookie).toMatch(/Max-Age=3600/);
      expect(setCookie).not.toMatch(/Secure/);
      const token = cookie.split('=')[1] ?? '';
      const stored = await t.service.db.selectFrom('dashboard_sessions').selectAll().execute();
      expect(stored).toHaveLength(1);
      expect(JSON.stringify(stored)).not.toContain(token);

      expect((await t.request('/dashboard', { headers: { cookie } })).status).toBe(200);
      clock.advance(3600_000 - 1);
      expect((await t.request('/dashboard/launches', { headers: { cookie } })).status).toBe(200);
      clock.advance(1);
      const expired = await t.request('/dashboard/launches', { headers: { cookie } });
      expect(expired.status).toBe(303);
      expect(expired.headers.get('location')).toBe('/dashboard/sign-in');

      const again = await signIn(t, created);
      expect((await t.request('/dashboard', { headers: { cookie: again.cookie } })).status).toBe(200);
      const row = await t.service.db.selectFrom('api_keys').select('id').where('owner', '=', 'root').executeTakeFirstOrThrow();
      await revokeApiKey(t.service.db, row.id, clock.now());
      expect((await t.request('/dashboard', { headers: { cookie: again.cookie } })).status).toBe(303);
    } finally {
      await t.close();
    }
  });

  it('refuses a wrong key without saying more, and never echoes it', async () => {
    const t = await startTestService();
    try {
      const form = await t.request('/dashboard/sign-in');
      const login = /dash_login=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1] ?? '';
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
      const wrong = 'sk_this_is_not_a_key_0123456789';
      const res = await t.request('/dashboard/sign-in', {
        method: 'POST',
        headers: { cookie: `dash_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ key: wrong, _csrf: csrf }).toString(),
      });
      expect(res.status).toBe(401);
      const html = await res.text();
      expect(html).toContain('not valid');
      expect(html).not.toContain(wrong);
      expect(res.headers.getSetCookie().some((c) => c.startsWith('dash_session='))).toBe(false);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    } finally {
      await t.close();
    }
  });

  it('marks the session cookie Secure in production', async () => {
    const t = await startTestService({ env: { NODE_ENV: 'production', CHAIN: 'embedded' } });
    try {
      const { setCookie } = await signIn(t, await t.key('root', ['admin']));
      expect(setCookie).toMatch(/; Secure/);
    } finally {
      await t.close();
    }
  });
});
