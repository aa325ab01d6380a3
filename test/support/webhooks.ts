import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createApiKey } from '../../src/auth/apiKeys.js';
import type { Config } from '../../src/config/config.js';
import { testConfig } from './config.js';
import { createSecretBox, type SecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, openPostgres, type Db } from '../../src/db/database.js';
import { createPostgresDatabase, onPostgres } from './database.js';
import type { Clock } from '../../src/lib/clock.js';
import { insertLaunch as insertLaunchRow } from '../../src/launches/store.js';
import { newId } from '../../src/lib/ids.js';
import { redactPaths, type Logger } from '../../src/lib/logger.js';
import { recordEvent } from '../../src/webhooks/outbox.js';

export type WebhookConfig = Pick<Config, 'production' | 'webhooks' | 'breaker'>;

const DEFAULTS = (() => {
  const { config, cleanup } = testConfig({ WEBHOOK_TIMEOUT_MS: '2s', WEBHOOK_POLL_INTERVAL_MS: '50ms', WEBHOOK_MAX_IN_FLIGHT: '16', WEBHOOK_MAX_IN_FLIGHT_PER_HOST: '4', WEBHOOK_TEST_SECRET: 'whsec_server_test_secret' });
  cleanup();
  return config;
})();

/**
 * The webhook engine's part of {@link testConfig} (the service's defaults: schedule, breaker, private
 * networks allowed outside production), with short timeouts and polls so tests run fast.
 */
export function engineConfig(overrides: { webhooks?: Partial<Config['webhooks']>; breaker?: Partial<Config['breaker']>; production?: boolean } = {}): WebhookConfig {
  return {
    production: overrides.production ?? false,
    webhooks: { ...DEFAULTS.webhooks, allowPrivateNetworks: true, ...overrides.webhooks },
    breaker: { ...DEFAULTS.breaker, ...overrides.breaker },
  };
}

export interface TestDb {
  db: Db;
  /** The SQLite file, or on PostgreSQL the database's URL (open either with `openDatabaseAt`). */
  path: string;
  dir: string;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database: a SQLite file in its own temp directory, or with TEST_DATABASE_URL a
 * database of its own on that PostgreSQL server (dropped by `close`).
 */
export async function createTestDb(): Promise<TestDb> {
  const dir = mkdtempSync(join(tmpdir(), 'webhooks-'));
  if (onPostgres) {
    const created = await createPostgresDatabase();
    const opened = openPostgres(created.url);
    await migrateToLatest(opened.db);
    return {
      db: opened.db,
      path: created.url,
      dir,
      async close() {
        await opened.close();
        await created.drop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const path = join(dir, 'test.sqlite');
  const opened = openDatabase(path);
  await migrateToLatest(opened.db);
  return {
    db: opened.db,
    path,
    dir,
    async close() {
      await opened.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const newSecretBox = (): SecretBox => createSecretBox(randomBytes(32));

/** Inserts a queued launch whose webhook secret is sealed like the launch route does. */
export async function insertLaunch(db: Db, clock: Clock, opts: { url: string; secret: string; box: SecretBox; owner?: string }): Promise<string> {
  const id = newId('lch');
  await insertLaunchRow(db, {
    id,
    owner: opts.owner ?? 'acme',
    request: JSON.stringify({ name: 'Demo Token', ticker: 'DEMO' }),
    webhookUrl: opts.url,
    webhookSecretEnc: opts.box.seal(opts.secret),
    requestId: 'req_test',
    steps: [],
    now: clock.now(),
  });
  return id;
}

/** Commits `count` events for the launch, each in its own transaction as the runner would. */
export async function commitEvents(db: Db, clock: Clock, launchId: string, count: number, event = 'launch.step_complete'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const recorded = await db.transaction().execute((trx) => recordEvent(trx, clock, { launchId, event, data: { step: 'create_mint', index: i }, requestId: `req_${i}` }));
    ids.push(recorded.eventId);
  }
  return ids;
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The test clock's time when the request arrived. */
  at: number;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Decides the answer to each request; default 200. */
  respond: (req: ReceivedRequest) => { status: number; body?: string; headers?: Record<string, string>; delayMs?: number } | 'hang';
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1, port chosen by the OS. */
export async function startReceiver(clock: Clock, path = '/hook'): Promise<Receiver> {
  const sockets = new Set<import('node:net').Socket>();
  const receiver: Receiver = {
    url: '',
    requests: [],
    respond: () => ({ status: 200, body: 'ok' }),
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got: ReceivedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: clock.now() };
      receiver.requests.push(got);
      const answer = receiver.respond(got);
      if (answer === 'hang') return;
      const send = () => res.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? '');
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  receiver.url = `http://127.0.0.1:${port}${path}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return receiver;
}

/** A pino logger (with the service's redaction) whose lines the test can read. */
export function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { logger: pino({ level: 'debug', redact: { paths: redactPaths, censor: '[redacted]' } }, stream), lines };
}

/** The tenants the tenancy tests use: acme (read+write and read-only), globex, and an admin. */
export async function tenantKeys(db: Db, now: number): Promise<{ acme: string; acmeRead: string; globex: string; admin: string }> {
  return {
    acme: (await createApiKey(db, { owner: 'acme', scopes: ['launches:read', 'launches:write'], now })).key,
    acmeRead: (await createApiKey(db, { owner: 'acme', scopes: ['launches:read'], now })).key,
    globex: (await createApiKey(db, { owner: 'globex', scopes: ['launches:read', 'launches:write'], now })).key,
    admin: (await createApiKey(db, { owner: 'ops', scopes: ['admin'], now })).key,
  };
}
