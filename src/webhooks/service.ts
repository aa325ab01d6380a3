import type { BreakerRegistry } from './breakerRegistry.js';
import { createWebhookEngine, type WebhookEngine, type WebhookEngineDeps } from './engine.js';
import type { OutboxSignal } from './outbox.js';

/** What the engine needs, less what it makes for itself when not given (the loop-lag monitor). */
export type WebhookServiceDeps = Omit<WebhookEngineDeps, 'loopLag'>;

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
