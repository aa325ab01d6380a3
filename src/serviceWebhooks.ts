import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Config } from './config/config.js';
import type { SecretBox } from './crypto/secretBox.js';
import type { Db } from './db/database.js';
import type { DeadLetterRow } from './db/schema.js';
import type { BreakerSource } from './health/healthService.js';
import type { AppEnv } from './http/env.js';
import type { Clock } from './lib/clock.js';
import type { OutboxSignal } from './webhooks/outbox.js';

export interface WebhookParts {
  signal: OutboxSignal;
  breakers: BreakerSource;
  routes: Array<[string, Hono<AppEnv>]>;
  start(): void;
  stop(): Promise<void>;
}

/** The webhook engine's parts, wired for the service. */
export function createWebhookParts(deps: {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Config;
  secretBox: SecretBox;
  retryLaunch(deadLetter: DeadLetterRow): Promise<void>;
}): WebhookParts {
  void deps;
  return {
    signal: { notify: () => undefined },
    breakers: { snapshot: () => ({}) },
    routes: [],
    start: () => undefined,
    stop: async () => undefined,
  };
}
