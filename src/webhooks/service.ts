import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { BreakerRegistry } from './breakerRegistry.js';
import { createWebhookEngine, type WebhookEngine } from './engine.js';
import type { HostLookup } from './guardedConnector.js';
import type { OutboxSignal } from './outbox.js';
import type { Wakeups } from '../db/wakeups.js';

export interface WebhookServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'production' | 'webhooks' | 'breaker'> & Partial<Pick<Config, 'endpoints'>>;
  secretBox: SecretBox;
  lookup?: HostLookup;
  /** Wake-ups between instances on one PostgreSQL database (none on SQLite). */
  wakeups?: Wakeups;
}

/** Everything the composition root needs from the webhook side (its routes are wired in `src/app/`). */
export interface WebhookService {
  engine: WebhookEngine;
  signal: OutboxSignal;
  breakers: BreakerRegistry;
  start(): void;
  stop(): Promise<void>;
}

/** Builds the delivery engine. */
export function createWebhookService(deps: WebhookServiceDeps): WebhookService {
  const engine = createWebhookEngine(deps);
  return {
    engine,
    signal: engine.signal,
    breakers: engine.breakers,
    start: () => engine.start(),
    stop: () => engine.stop(),
  };
}
