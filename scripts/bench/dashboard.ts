import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createService, type Service } from '../../src/app/service.js';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { loadConfig } from '../../src/config/config.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import type { NewLaunch } from '../../src/db/schema.js';
import { newId } from '../../src/lib/ids.js';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { endpointKey, hostOfEndpoint } from '../../src/webhooks/endpointKey.js';
import { percentile, result, type BenchResult } from './types.js';

const STEPS = ['create_mint', 'create_metadata', 'distribute_supply'];
const STATUSES = ['complete', 'complete', 'complete', 'complete', 'complete', 'complete', 'complete', 'failed', 'queued', 'processing'] as const;

/** Fills the database like a service that ran for a day: launches with steps, events, deliveries, attempts, dead letters. */
export async function fill(db: Db, secretKey: Buffer, launches: number, deliveriesPerLaunch: number): Promise<{ sampleLaunch: string }> {
  const box = createSecretBox(secretKey);
  const sealed = box.seal('whsec_bench_dashboard_0123456789');
  const now = Date.now();
  const span = 24 * 3600_000;
  let sampleLaunch = '';
  const chunk = 200;
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < launches; start += chunk) {
      const launchRows: NewLaunch[] = [];
      const stepRows: Array<Record<string, unknown>> = [];
      const eventRows = [];
      const deliveryRows = [];
      const attemptRows = [];
      const deadRows = [];
      for (let i = start; i < Math.min(launches, start + chunk); i++) {
        const id = newId('lch');
        const created = now - Math.floor(((launches - i) / launches) * span);
        const status = STATUSES[i % STATUSES.length] ?? 'complete';
        const owner = `owner${i % 50}`;
        const host = `hooks${i % 20}.example.com`;
        const url = `https://${host}/hooks`;
        if (i === Math.floor(launches / 2)) sampleLaunch = id;
        launchRows.push({
          id, owner, status, request: JSON.stringify({ name: `Token ${i}`, ticker: `T${i % 1000}` }), webhook_url: url, webhook_secret_enc: sealed,
          error: status === 'failed' ? JSON.stringify({ code: 'program_error', message: 'custom program error: 0x1', step: 'distribute_supply' }) : null,
          request_id: 'req_bench', lease_owner: null, lease_expires_at: null, run_after: created, created_at: created, updated_at: created + 2000,
          started_at: created + 10, completed_at: status === 'complete' || status === 'failed' ? created + 2000 : null, next_sequence: deliveriesPerLaunch + 1,
        });
        STEPS.forEach((name, position) =>
          stepRows.push({
            launch_id: id, name, position, status: status === 'complete' ? 'complete' : 'pending', attempts: 1, error: null, pending_tx: null,
            result: status === 'complete' ? JSON.stringify({ mint: 'So11111111111111111111111111111111111111112' }) : null,
            transactions: JSON.stringify(status === 'complete' ? [{ type: 'mint', signature: '5'.repeat(88) }] : []),
            started_at: created + 10 + position * 500, completed_at: status === 'complete' ? created + 500 + position * 500 : null,
          }),
        );
        for (let s = 1; s <= deliveriesPerLaunch; s++) {
          const eventId = newId('evt');
          const deliveryId = newId('dlv');
          const at = created + s * 100;
          const outcome = (i * deliveriesPerLaunch + s) % 12 === 0 ? 'failed' : (i * deliveriesPerLaunch + s) % 50 === 1 ? 'pending' : 'delivered';
          const body = JSON.stringify({ id: eventId, event: 'launch.step_complete', timestamp: new Date(at).toISOString(), launchId: id, sequence: s, data: { step: 'create_mint', index: 1, total: 3 } });
          eventRows.push({ id: eventId, launch_id: id, sequence: s, event: 'launch.step_complete', body, request_id: 'req_bench', created_at: at });
          deliveryRows.push({
            id: deliveryId, event_id: eventId, launch_id: id, url, host, status: outcome, attempt_count: outcome === 'pending' ? 0 : 1, next_attempt_at: at, lease_owner: null, lease_expires_at: null,
            last_error: outcome === 'failed' ? 'receiver answered 500' : null, last_status_code: outcome === 'failed' ? 500 : outcome === 'delivered' ? 200 : null,
            created_at: at, updated_at: at + 50, completed_at: outcome === 'pending' ? null : at + 50,
          });
          if (outcome !== 'pending') {
            attemptRows.push({
              id: newId('att'), delivery_id: deliveryId, attempt: 1, started_at: at + 5, duration_ms: 20 + (s % 40), status_code: outcome === 'failed' ? 500 : 200,
              outcome: outcome === 'failed' ? 'failure' : 'success', error_class: outcome === 'failed' ? 'http_status' : null, error_message: outcome === 'failed' ? 'receiver answered 500' : null,
              response_body: outcome === 'failed' ? 'internal error' : 'ok',
            });
          }
          if (outcome === 'failed') {
            deadRows.push({
              id: newId('dl'), kind: 'delivery', owner, launch_id: id, delivery_id: deliveryId, event_id: eventId, step: null, error_code: 'delivery_failed',
              error_message: 'receiver answered 500', status: 'open', retry_count: 0, created_at: at + 60, updated_at: at + 60, resolved_at: null,
            });
          }
        }
      }
      await trx.insertInto('launches').values(launchRows).execute();
      await trx.insertInto('launch_steps').values(stepRows as never).execute();
      for (let k = 0; k < eventRows.length; k += 500) {
        await trx.insertInto('outbox_events').values(eventRows.slice(k, k + 500)).execute();
        await trx.insertInto('deliveries').values(deliveryRows.slice(k, k + 500) as never).execute();
      }
      for (let k = 0; k < attemptRows.length; k += 500) await trx.insertInto('delivery_attempts').values(attemptRows.slice(k, k + 500) as never).execute();
      for (let k = 0; k < deadRows.length; k += 500) await trx.insertInto('dead_letters').values(deadRows.slice(k, k + 500) as never).execute();
    }
    for (let h = 0; h < 20; h++) {
      const url = `https://hooks${h}.example.com/hooks`;
      await trx
        .insertInto('endpoint_breakers')
        .values({ endpoint: endpointKey(url), host: hostOfEndpoint(endpointKey(url)), state: h < 2 ? 'open' : 'closed', failures: h < 2 ? 3 : 0, opened_at: h < 2 ? now : null, updated_at: now })
        .execute();
    }
  });
  return { sampleLaunch };
}

async function signIn(service: Service, key: string): Promise<string> {
  const form = await service.app.request('/dashboard/sign-in');
  const login = /dash_login=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const res = await service.app.request('/dashboard/sign-in', {
    method: 'POST',
    headers: { cookie: `dash_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key, _csrf: csrf }).toString(),
  });
  const session = /dash_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
  if (res.status !== 303 || !session) throw new Error(`dashboard sign-in failed: ${res.status}`);
  return `dash_session=${session}`;
}

/** p95 of `samples` GETs of each page (after warm-up), through the whole app. */
async function timePages(service: Service, cookie: string, pages: string[], samples: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const page of pages) {
    const times: number[] = [];
    for (let i = 0; i < samples + 3; i++) {
      const t = performance.now();
      const res = await service.app.request(page, { headers: { cookie } });
      await res.text();
      if (res.status !== 200) throw new Error(`${page} answered ${res.status}`);
      if (i >= 3) times.push(performance.now() - t);
    }
    out.set(page, percentile(times, 95));
    out.set(`${page} p50`, percentile(times, 50));
  }
  return out;
}

async function measure(launches: number, deliveriesPerLaunch: number, samples: number): Promise<Map<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-dashboard-'));
  const secretKey = randomBytes(32);
  try {
    const opened = openDatabase(join(dir, 'launch-service.sqlite'));
    await migrateToLatest(opened.db);
    const { sampleLaunch } = launches > 0 ? await fill(opened.db, secretKey, launches, deliveriesPerLaunch) : { sampleLaunch: '' };
    const admin = await createApiKey(opened.db, { owner: 'root', scopes: ['admin'], now: Date.now() });
    const owner = await createApiKey(opened.db, { owner: 'owner7', scopes: ['launches:read'], now: Date.now() });
    await opened.close();
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', SECRET_KEY: secretKey.toString('base64') });
    // The workers are not started: the pages are measured against a still database.
    const service = await createService(config, { logger: silentLogger(), clock: systemClock });
    try {
      const cookie = await signIn(service, admin.key);
      const pages = ['/dashboard', '/dashboard/launches', '/dashboard/launches?status=failed', '/dashboard/launches?offset=5000', '/dashboard/deliveries', '/dashboard/deliveries?status=failed', '/dashboard/dead-letters?status=open', '/dashboard/breakers'];
      if (sampleLaunch) pages.push(`/dashboard/launches/${sampleLaunch}`);
      const times = await timePages(service, cookie, pages, samples);
      const ownerTimes = await timePages(service, await signIn(service, owner.key), ['/dashboard', '/dashboard/launches', '/dashboard/deliveries'], samples);
      for (const [page, ms] of ownerTimes) times.set(page.endsWith(' p50') ? `${page.slice(0, -4)} (owner) p50` : `${page} (owner)`, ms);
      return times;
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `dashboard`: p95 of every dashboard page with 10 000 launches and 100 000 deliveries vs the same pages on an empty database. */
export async function benchDashboard(launches = 10_000, deliveriesPerLaunch = 10, samples = 20): Promise<{ results: BenchResult[]; note: string }> {
  const full = await measure(launches, deliveriesPerLaunch, samples);
  const empty = await measure(0, 0, samples);
  const p95 = (m: Map<string, number>) => [...m].filter(([page]) => !page.endsWith(' p50'));
  const worst = p95(full).sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  const results = [result('dashboard-page-p95-worst', worst[1], 'ms', Math.max(...p95(empty).map(([, ms]) => ms)))];
  const detail = p95(full).map(([page, ms]) => `${page.replace(/^\/dashboard(?=$| )/, '/').replace(/^\/dashboard/, '')} ${ms.toFixed(1)} (p50 ${(full.get(`${page.replace(' (owner)', '')}${page.endsWith(' (owner)') ? ' (owner)' : ''} p50`) ?? NaN).toFixed(1)})`).join(', ');
  return { results, note: `${launches} launches, ${launches * deliveriesPerLaunch} deliveries/attempts/events; worst ${worst[0]}; p95 ms per page: ${detail}; baseline = worst page on an empty database` };
}
