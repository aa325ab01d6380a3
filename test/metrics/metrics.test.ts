import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, sumSamples } from '../../src/metrics/parseText.js';
import { startFaultReceiver, type FaultReceiver } from '../reliability/support/faultReceiver.js';
import { serveOnPort, type ServedService } from '../reliability/support/server.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

async function until(condition: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /metrics', () => {
  let t: TestService;
  let http: ServedService;
  let receiver: FaultReceiver;
  let key: string;

  beforeAll(async () => {
    receiver = await startFaultReceiver();
    // The very first delivery attempt fails (500), its retry and every other one succeed.
    receiver.decide = (_path, n) => (n === 0 ? '500' : 'ok');
    t = await startTestService({ env: { WEBHOOK_RETRY_SCHEDULE: '0,50ms,50ms', WEBHOOK_POLL_INTERVAL_MS: '50ms' } });
    // A route that fails, so the 5xx counters have something real to count.
    t.service.app.get('/api/test-failure', () => {
      throw new Error('boom');
    });
    key = await t.key('acme', ['launches:write', 'launches:read']);
    http = await serveOnPort(t);
  });
  afterAll(async () => {
    await http?.close();
    await t?.close();
    await receiver?.close();
  });

  const scrape = async () => {
    const res = await http.send('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text;
  };

  it('exports the documented names in a format a Prometheus parser reads, with counters that move with requests and deliveries', async () => {
    const before = parsePrometheusText(await scrape());
    expect(sumSamples(before, 'launch_service_webhook_attempts_total')).toBe(0);

    const created = await http.send('POST', '/api/launches', {
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(launchBody({ webhookUrl: `${receiver.origin}/hooks` })),
    });
    expect(created.status).toBe(202);
    const launchId = (JSON.parse(created.text) as { launch: { id: string } }).launch.id;
    for (const id of [launchId, 'lch_missing_1', 'lch_missing_2']) await http.send('GET', `/api/launches/${id}`, { headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 3; i++) expect((await http.send('GET', '/api/test-failure')).status).toBe(500);
    expect((await http.send('GET', '/no/such/path/123')).status).toBe(404);

    t.service.start();
    await until(() => receiver.log.filter((r) => r.fault === 'ok').length === 6, 'six delivered events');
    await until(async () => (await t.service.db.selectFrom('deliveries').select('id').where('status', '=', 'pending').execute()).length === 0, 'no pending delivery');

    const text = await scrape();
    // An independent parser reads the whole exposition.
    const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    for (const name of [
      'launch_service_http_requests_total',
      'launch_service_http_request_duration_seconds',
      'launch_service_webhook_attempts_total',
      'launch_service_webhook_delivery_seconds',
      'launch_service_outbox_pending',
      'launch_service_breakers',
      'launch_service_launches_total',
      'launch_service_step_duration_seconds',
      'launch_service_watch_lag_seconds',
      'launch_service_health_status',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(families.has(name), name).toBe(true);
    }
    expect(families.get('launch_service_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(families.get('launch_service_webhook_delivery_seconds')?.type).toBe('HISTOGRAM');
    expect(families.get('launch_service_http_requests_total')?.type).toBe('COUNTER');

    const s = parsePrometheusText(text);
    const requests = (where: Record<string, string>) => sumSamples(s, 'launch_service_http_requests_total', (l) => Object.entries(where).every(([k, v]) => l[k] === v));
    // Routes are patterns: three different ids are one series.
    expect(requests({ method: 'GET', route: '/api/launches/:id' })).toBe(3);
    expect(requests({ method: 'GET', route: '/api/launches/:id', status: '200' })).toBe(1);
    expect(requests({ method: 'GET', route: '/api/launches/:id', status: '404' })).toBe(2);
    expect(requests({ method: 'POST', route: '/api/launches', status: '202' })).toBe(1);
    expect(requests({ route: '/api/test-failure', status: '500' })).toBe(3);
    expect(requests({ route: 'unmatched', status: '404' })).toBe(1);
    expect(s.some((x) => x.labels.route?.includes('lch_'))).toBe(false);

    expect(sumSamples(s, 'launch_service_webhook_attempts_total', (l) => l.outcome === 'success')).toBe(6);
    expect(sumSamples(s, 'launch_service_webhook_attempts_total', (l) => l.outcome === 'failure')).toBe(1);
    expect(sumSamples(s, 'launch_service_webhook_delivery_seconds_count')).toBe(6);
    expect(sumSamples(s, 'launch_service_outbox_pending')).toBe(0);
    expect(sumSamples(s, 'launch_service_health_status')).toBe(0);
    expect(sumSamples(s, 'launch_service_launches_total', (l) => l.status === 'queued')).toBe(1);
    expect(sumSamples(s, 'launch_service_launches_total', (l) => l.status === 'complete')).toBe(1);
    expect(sumSamples(s, 'launch_service_launches_total', (l) => l.status === 'failed')).toBe(0);
    for (const step of ['create_mint', 'create_metadata', 'distribute_supply']) {
      expect(sumSamples(s, 'launch_service_step_duration_seconds_count', (l) => l.step === step), step).toBe(1);
    }

    // A later scrape counts only what is new: nothing was delivered since, so nothing moved.
    const again = parsePrometheusText(await scrape());
    expect(sumSamples(again, 'launch_service_webhook_attempts_total')).toBe(7);
    expect(sumSamples(again, 'launch_service_webhook_delivery_seconds_count')).toBe(6);
  });
});

describe('METRICS_TOKEN', () => {
  it('refuses /metrics without the bearer token and serves it with the token', async () => {
    const t = await startTestService({ env: { METRICS_TOKEN: 'metrics-token-123' } });
    try {
      const none = await t.request('/metrics');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/Bearer/);
      expect(await none.text()).not.toContain('launch_service_');
      expect((await t.request('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const ok = await t.request('/metrics', { headers: { authorization: 'Bearer metrics-token-123' } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('launch_service_http_requests_total');
    } finally {
      await t.close();
    }
  });
});

describe('launch_service_watch_lag_seconds', () => {
  it('reads how overdue the most overdue active watch is, and 0 without one', async () => {
    const t = await startTestService();
    try {
      const gauge = async () => sumSamples(parsePrometheusText(await (await t.request('/metrics')).text()), 'launch_service_watch_lag_seconds');
      expect(await gauge()).toBe(0);
      const key = await t.key('acme', ['launches:write']);
      const launchId = await t.createLaunch(key);
      const now = Date.now();
      const watch = (id: string, state: string, due: number) =>
        sql`insert into watches (id, launch_id, kind, address, context, state, next_check_at, interval_ms, ends_at, created_at, updated_at)
            values (${id}, ${launchId}, 'mint', 'So11111111111111111111111111111111111111112', '{}', ${state}, ${due}, 1000, ${now + 3600_000}, ${now}, ${now})`.execute(t.service.db);
      await watch('wch_ended', 'ended', now - 600_000);
      await watch('wch_late', 'active', now - 90_000);
      await watch('wch_future', 'active', now + 60_000);
      const lag = await gauge();
      expect(lag).toBeGreaterThanOrEqual(90);
      expect(lag).toBeLessThan(120);
    } finally {
      await t.close();
    }
  });
});
