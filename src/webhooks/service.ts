import type { Hono } from 'hono';
import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import type { AppEnv } from '../http/env.js';
import { createDeadLetterRoutes } from '../http/routes/deadLetters.js';
import { createDeliveryRoutes } from '../http/routes/deliveries.js';
import { createWebhookTestRoutes } from '../http/routes/webhooks.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { BreakerRegistry } from './breakerRegistry.js';
import { createWebhookEngine, type WebhookEngine } from './engine.js';
import type { HostLookup } from './guardedConnector.js';
import type { OutboxSignal } from './outbox.js';

export interface WebhookServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'production' | 'webhooks' | 'breaker'>;
  secretBox: SecretBox;
  /** Resumes a failed launch at its failed step (for `kind: 'launch'` dead letters). */
  retryLaunch(deadLetter: DeadLetterRow): Promise<void>;
  lookup?: HostLookup;
}

/** Everything the composition root needs from the webhook side, with routes ready to mount under /api. */
export interface WebhookService {
  engine: WebhookEngine;
  signal: OutboxSignal;
  breakers: BreakerRegistry;
  /** `[path, app]` pairs; each app holds full paths below /api, so every path is `/`. */
  routes: Array<[string, Hono<AppEnv>]>;
  start(): void;
  stop(): Promise<void>;
}

/** Builds the engine and its three route modules. */
export function createWebhookService(deps: WebhookServiceDeps): WebhookService {
  const engine = createWebhookEngine(deps);
  const routeDeps = { db: deps.db, clock: deps.clock, signal: engine.signal };
  return {
    engine,
    signal: engine.signal,
    breakers: engine.breakers,
    routes: [
      ['/', createWebhookTestRoutes({ clock: deps.clock, client: engine.client, breakers: engine.breakers, testSecret: deps.config.webhooks.testSecret })],
      ['/', createDeliveryRoutes(routeDeps)],
      ['/', createDeadLetterRoutes({ ...routeDeps, retryLaunch: deps.retryLaunch })],
    ],
    start: () => engine.start(),
    stop: () => engine.stop(),
  };
}
