import type { Config } from '../../src/config/config.js';
import { createApiKey } from '../../src/auth/apiKeys.js';
import type { Scope } from '../../src/auth/scopes.js';
import { systemClock, type Clock } from '../../src/lib/clock.js';
import { silentLogger, type Logger } from '../../src/lib/logger.js';
import { createService, type Service } from '../../src/app/service.js';
import { join } from 'node:path';
import { testConfig } from './config.js';
import { launchBody } from './fixtures.js';
import { createPostgresDatabase, onPostgres } from './database.js';

export interface TestService {
  service: Service;
  config: Config;
  dir: string;
  /** Creates a key and returns its plaintext. */
  key(owner: string, scopes: Scope[]): Promise<string>;
  request(path: string, init?: RequestInit & { key?: string; json?: unknown }): Promise<Response>;
  /** Creates a launch through the API (`launchBody()` unless given) and returns its id; throws unless 202. */
  createLaunch(key: string, body?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/**
 * The whole service (real SQLite file, embedded chain) without a port: requests go through
 * app.request(). With TEST_DATABASE_URL the service runs on a fresh PostgreSQL database of its own,
 * and the embedded chain keeps its state in a SQLite file beside it.
 */
export async function startTestService(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    logger?: Logger;
    /** On PostgreSQL, the embedded chain's SQLite file (default: one in the service's own directory); a second instance may start from the first's. */
    embeddedChainFile?: string;
  } = {},
): Promise<TestService> {
  const pgDatabase = onPostgres && options.env?.DATABASE_URL === undefined ? await createPostgresDatabase() : undefined;
  const { config, dir, cleanup } = testConfig({ ...(pgDatabase ? { DATABASE_URL: pgDatabase.url } : {}), ...options.env });
  const service = await createService(config, {
    logger: options.logger ?? silentLogger(),
    clock: options.clock ?? systemClock,
    embeddedChainFile: config.postgres ? (options.embeddedChainFile ?? join(dir, 'chain.sqlite')) : undefined,
  }).catch(async (error: unknown) => {
    cleanup();
    await pgDatabase?.drop();
    throw error;
  });
  const t: TestService = {
    service,
    config,
    dir,
    key: async (owner, scopes) => (await createApiKey(service.db, { owner, scopes, now: Date.now() })).key,
    request(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.key) headers.set('authorization', `Bearer ${init.key}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return Promise.resolve(service.app.request(path, { ...init, headers, body }));
    },
    async createLaunch(key, body = launchBody()) {
      const res = await t.request('/api/launches', { method: 'POST', key, json: body });
      if (res.status !== 202) throw new Error(`POST /api/launches answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { launch: { id: string } }).launch.id;
    },
    async close() {
      await service.stop();
      cleanup();
      await pgDatabase?.drop();
    },
  };
  return t;
}
