import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { startLoopLagMonitor, type LoopLag } from '../lib/loopLag.js';
import { noWakeups, type Wakeups } from '../db/wakeups.js';
import { createBreakerRegistry, type BreakerRegistry } from './breakerRegistry.js';
import { createDispatcher, type Dispatcher } from './dispatcher.js';
import type { HostLookup } from './guardedConnector.js';
import { createWebhookHttpClient, type WebhookHttpClient } from './httpClient.js';
import type { OutboxSignal } from './outbox.js';
import { noteEndpointFailure } from './endpoints/endpointHealth.js';
import { createEventFeed, type EventFeed } from './stream/eventFeed.js';

export interface WebhookEngineDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'production' | 'webhooks' | 'breaker'> & Partial<Pick<Config, 'endpoints'>>;
  secretBox: SecretBox;
  /** DNS for the outbound guard; tests inject one to simulate hostile answers. */
  lookup?: HostLookup;
  /** The process's event-loop delay monitor (one is started when not given). */
  loopLag?: LoopLag;
  /** Wake-ups between instances on one PostgreSQL database (none on SQLite). */
  wakeups?: Wakeups;
  /** Breakers timed by the database server's clock (see BreakerRegistryDeps.databaseClock). */
  databaseClock?: boolean;
}

/** The webhook delivery side, built once by the composition root. */
export interface WebhookEngine {
  /** Pass to code that records events; call `notify()` after the transaction commits. */
  signal: OutboxSignal;
  dispatcher: Dispatcher;
  /** `breakers.snapshot()` feeds `circuitBreakers` of /api/health. */
  breakers: BreakerRegistry;
  /** The HTTP client (guard, timeout, bounded reads) shared with the test route. */
  client: WebhookHttpClient;
  /** Wakes the event streams (`GET /api/events/stream`) when events may have committed. */
  feed: EventFeed;
  /** This process's event-loop delay: attempts consult it, and bulk work holds back while it is high. */
  loopLag: LoopLag;
  /** Starts the dispatcher loop; breakers are restored from the database before its first claim. */
  start(): void;
  stop(): Promise<void>;
}

/** True when docs/delivery.md's guard applies: always in production, elsewhere unless private networks are allowed. */
export function outboundGuardEnabled(config: Pick<Config, 'production' | 'webhooks'>): boolean {
  return config.production || !config.webhooks.allowPrivateNetworks;
}

/** Builds the dispatcher, per-host breakers and HTTP client from config. */
export function createWebhookEngine(deps: WebhookEngineDeps): WebhookEngine {
  const { webhooks, breaker } = deps.config;
  const disableAfterMs = deps.config.endpoints?.disableAfterMs ?? 5 * 86_400_000;
  // The loop's own delay, so an attempt that failed because this process stalled is not blamed on the receiver.
  const loopLag = deps.loopLag ?? startLoopLagMonitor();
  const client = createWebhookHttpClient({
    timeoutMs: webhooks.timeoutMs,
    guard: outboundGuardEnabled(deps.config),
    lookup: deps.lookup,
    loopLag,
    // In production a refused destination is not explained to the customer (what an internal name
    // resolves to is nobody's business outside); the server log keeps the detail.
    revealBlockedDetails: !deps.config.production,
  });
  // A lease shorter than an attempt could expire mid-flight and cause a duplicate send.
  const leaseMs = Math.max(webhooks.leaseMs, webhooks.timeoutMs + 5_000);
  // The half-open trial lease outlives the trial attempt for the same reason (one trial across instances).
  const wakeups = deps.wakeups ?? noWakeups;
  const breakers = createBreakerRegistry({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    policy: breaker,
    trialLeaseMs: leaseMs,
    databaseClock: deps.databaseClock,
    onChange: () => wakeups.publish('breakers'),
  });
  const dispatcher = createDispatcher({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    secretBox: deps.secretBox,
    client,
    breakers,
    afterAttempt: (ctx, outcome, now) => {
      // A success ended the endpoint's failing run when it was settled (settle.ts). A secret we
      // cannot decrypt, or our own stalled loop, is our problem, not the endpoint's. (Nothing to do
      // returns no promise: most attempts.)
      const endpointId = ctx.endpointId;
      if (outcome.ok || endpointId === null || outcome.errorClass === 'secret_unavailable' || outcome.serviceFault) return undefined;
      return noteEndpointFailure(deps.db, { endpointId, statusCode: outcome.statusCode, now, disableAfterMs }).then((disabled) => {
        if (disabled) deps.logger.warn({ component: 'webhook-endpoints', endpointId, reason: disabled, statusCode: outcome.statusCode }, 'webhook endpoint disabled');
      });
    },
    busy: () => loopLag.busy(),
    options: {
      retrySchedule: webhooks.retrySchedule,
      maxInFlight: webhooks.maxInFlight,
      maxInFlightPerHost: webhooks.maxInFlightPerHost,
      maxInFlightPerEndpoint: webhooks.maxInFlightPerEndpoint,
      maxInFlightPerOwner: webhooks.maxInFlightPerOwner,
      prefetchPerHost: webhooks.prefetchPerHost,
      leaseMs,
      pollIntervalMs: webhooks.pollIntervalMs,
    },
  });
  const feed = createEventFeed();
  // Another instance committed events, or changed a breaker: look now instead of at the next poll.
  wakeups.on('deliveries', () => (dispatcher.notify(), feed.wake()));
  wakeups.on('breakers', () => (breakers.invalidate(), dispatcher.notify()));
  return {
    // Our own commits wake our dispatcher and, through the database, the other instances'.
    signal: deps.wakeups
      ? { notify: (handoff) => (dispatcher.notify(handoff), wakeups.publish('deliveries'), feed.wake()) }
      : { notify: (handoff) => (dispatcher.notify(handoff), feed.wake()) },
    dispatcher,
    feed,
    breakers,
    client,
    loopLag,
    start() {
      dispatcher.start();
    },
    async stop() {
      feed.close();
      const settled = await dispatcher.stop();
      breakers.shutdown();
      // Attempts still out after the dispatcher's grace are left to their leases: do not wait for them.
      if (settled) await client.close();
      else void client.close().catch(() => undefined);
      if (!deps.loopLag) loopLag.stop();
    },
  };
}
