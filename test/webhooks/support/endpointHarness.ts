import { randomBytes } from 'node:crypto';
import { webhookRoutes } from '../../../src/app/routes.js';
import { createSecretBox, type SecretBox } from '../../../src/crypto/secretBox.js';
import type { Config } from '../../../src/config/config.js';
import { createApp } from '../../../src/http/app.js';
import { RateLimiter } from '../../../src/http/middleware/rateLimit.js';
import { createWebhookEndpointRoutes } from '../../../src/http/routes/webhookEndpoints.js';
import type { Clock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { createWebhookService, type WebhookService } from '../../../src/webhooks/service.js';
import { createTestDb, engineConfig, tenantKeys, type TestDb } from '../../support/webhooks.js';

type Json = Record<string, any>;

/** A migrated database, the webhook service on it and the endpoint routes: what the endpoint feature tests share. */
export interface EndpointHarness {
  tdb: TestDb;
  service: WebhookService;
  box: SecretBox;
  /** The box's key (a dispatcher process of its own opens the secrets with it). */
  secretKey: Buffer;
  keys: Awaited<ReturnType<typeof tenantKeys>>;
  call(method: string, path: string, key?: string, body?: unknown): Promise<{ status: number; body: Json }>;
  /** Creates an endpoint through the API (acme's unless another key is given) and returns it with its secret. */
  createEndpoint(body: Json, key?: string): Promise<Json>;
  /** Stops the service's dispatcher (once; `close` does it too). */
  stopService(): Promise<void>;
  close(): Promise<void>;
}

export async function startEndpointHarness(clock: Clock, webhooks: Partial<Config['webhooks']> = {}, breaker: Partial<Config['breaker']> = { failureThreshold: 1_000 }): Promise<EndpointHarness> {
  const tdb = await createTestDb();
  const secretKey = randomBytes(32);
  const box = createSecretBox(secretKey);
  const config = engineConfig({ breaker, webhooks });
  const service = createWebhookService({ db: tdb.db, clock, logger: silentLogger(), config: { ...config, endpoints: { disableAfterMs: 5 * 86_400_000 } }, secretBox: box });
  const deps = { db: tdb.db, clock, secretBox: box, production: false, signal: service.signal };
  const app = createApp({
    db: tdb.db,
    logger: silentLogger(),
    limiter: new RateLimiter(100_000, clock),
    bodyLimitBytes: 65_536,
    routes: [
      ['/webhook-endpoints', createWebhookEndpointRoutes(deps)],
      ...webhookRoutes({ db: tdb.db, clock, engine: service.engine, testSecret: 'whsec_test', requeueLaunch: async () => undefined, wakeRunner: () => undefined }),
    ],
  });
  const keys = await tenantKeys(tdb.db, clock.now());
  const call: EndpointHarness['call'] = async (method, path, key, body) => {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await app.request(`/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Json };
  };
  let stopped: Promise<void> | undefined;
  const stopService = () => (stopped ??= service.stop());
  return {
    tdb,
    service,
    box,
    secretKey,
    keys,
    call,
    async createEndpoint(body, key = keys.acme) {
      const res = await call('POST', '/webhook-endpoints', key, body);
      if (res.status !== 201) throw new Error(`create endpoint answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body.endpoint as Json;
    },
    stopService,
    async close() {
      await stopService();
      await tdb.close();
    },
  };
}
