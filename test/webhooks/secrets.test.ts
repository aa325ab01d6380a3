import { existsSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { webhookRoutes } from '../../src/app/routes.js';
import { createApiKey } from '../../src/auth/apiKeys.js';
import { createApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/middleware/rateLimit.js';
import { manualClock } from '../../src/lib/clock.js';
import { createWebhookService, type WebhookService } from '../../src/webhooks/service.js';
import { onPostgres, openDatabaseAt } from '../support/database.js';
import { captureLogger, commitEvents, createTestDb, insertLaunch, newSecretBox, startReceiver, engineConfig, type Receiver, type TestDb } from '../support/webhooks.js';

const SECRET = 'whsec_Sup3rS3cret_do_not_leak_8f2a';
const TEST_SECRET = 'whsec_test_route_secret_4c1d';

describe('webhook secrets', () => {
  let tdb: TestDb;
  let receiver: Receiver;
  let service: WebhookService;
  const clock = manualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const box = newSecretBox();
  const captured = captureLogger();

  beforeEach(async () => {
    tdb = await createTestDb();
    receiver = await startReceiver(clock);
    service = createWebhookService({ db: tdb.db, clock, logger: captured.logger, config: engineConfig(), secretBox: box });
  });
  afterEach(async () => {
    await service.stop();
    await receiver.close();
    await tdb.close();
  });

  it('never appear in clear in the database, the logs or API responses', async () => {
    const launchId = await insertLaunch(tdb.db, clock, { url: receiver.url, secret: SECRET, box });
    await commitEvents(tdb.db, clock, launchId, 3);
    let n = 0;
    receiver.respond = () => (n++ === 0 ? { status: 500, body: 'first one fails' } : { status: 200 });
    await service.engine.dispatcher.drain();
    clock.advance(30_000);
    await service.engine.dispatcher.drain();
    expect(receiver.requests).toHaveLength(4);

    const app = createApp({ db: tdb.db, logger: captured.logger, limiter: new RateLimiter(1000, clock), bodyLimitBytes: 65_536,
      routes: webhookRoutes({ db: tdb.db, clock, engine: service.engine, testSecret: engineConfig().webhooks.testSecret, requeueLaunch: async () => undefined, wakeRunner: () => undefined }),
    });
    const { key } = await createApiKey(tdb.db, { owner: 'acme', scopes: ['launches:read', 'launches:write'], now: clock.now() });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const responses: string[] = [];
    for (const [method, path, body] of [
      ['POST', '/api/webhooks/test', { webhookUrl: receiver.url, event: 'launch.queued', webhookSecret: TEST_SECRET }],
      ['GET', `/api/launches/${launchId}/deliveries`, undefined],
    ] as const) {
      const res = await app.request(path, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
      expect(res.status).toBe(200);
      responses.push(await res.text());
    }
    for (const text of responses) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(TEST_SECRET);
    }

    // Every text value of every table, read with a separate connection.
    const raw = openDatabaseAt(tdb.path);
    const tables = await raw.db.introspection.getTables();
    let scanned = 0;
    for (const { name } of tables) {
      const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(raw.db);
      for (const row of rows) {
        for (const value of Object.values(row)) {
          if (typeof value === 'string') {
            scanned += 1;
            expect(value).not.toContain(SECRET);
            expect(value).not.toContain(TEST_SECRET);
          }
        }
      }
    }
    await raw.close();
    expect(scanned).toBeGreaterThan(20);
    // And on SQLite the raw bytes of the file and its write-ahead log.
    if (!onPostgres) for (const file of [tdb.path, `${tdb.path}-wal`].filter(existsSync)) expect(readFileSync(file).includes(SECRET)).toBe(false);

    const logs = captured.lines.join('');
    expect(logs).not.toContain(SECRET);
    expect(logs).not.toContain(TEST_SECRET);
    const attemptLogs = captured.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.component === 'webhook-dispatcher' && l.deliveryId);
    expect(attemptLogs).toHaveLength(4);
    expect(attemptLogs.every((l) => l.launchId === launchId && typeof l.attempt === 'number')).toBe(true);
  });
});
