import type { SecretBox } from '../../crypto/secretBox.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { BreakerRegistry } from '../breakerRegistry.js';
import type { AttemptOutcome, WebhookHttpClient } from '../httpClient.js';
import type { OutboxSignal } from '../outbox.js';
import type { DeliveryContext } from './deliveryContext.js';

/** The dispatcher's options, dependencies and face (its stages and their composition: dispatcher.ts). */
export interface DispatcherOptions {
  retrySchedule: readonly number[];
  maxInFlight: number;
  maxInFlightPerHost: number;
  /** Per-endpoint in-flight cap over every dispatcher's live leases (default: the per-host cap), lowered while an endpoint answers slowly (endpointPace.ts). */
  maxInFlightPerEndpoint?: number;
  /** Attempts of one owner sent at once (default: `maxInFlight` less a quarter, rounded down), so slots stay free for other owners; at most `lookahead` more claimed ahead. */
  maxInFlightPerOwner?: number;
  leaseMs: number;
  pollIntervalMs: number;
  /** Deliveries claimed ahead beyond the free in-flight slots, waiting in the local queue (default a quarter of `maxInFlight`). */
  lookahead?: number;
  /**
   * Deliveries per host leased beyond its in-flight cap, waiting in the local queue so that a freed
   * slot is refilled without a database round trip (default: the per-host cap; 0: leases stay
   * within the caps). Attempts in flight stay within the caps over every instance (dispatch/sendAllowance.ts).
   */
  prefetchPerHost?: number;
  /** How long `stop()` lets attempts in flight finish (default 5 s); what is still out then is left to its lease. */
  stopGraceMs?: number;
}

export interface DispatcherDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  secretBox: SecretBox;
  client: WebhookHttpClient;
  breakers: BreakerRegistry;
  options: DispatcherOptions;
  /** Runs after each settled attempt (webhook endpoint health: a 410 or a long failing run disables it); returns nothing when it has nothing to do. */
  afterAttempt?(ctx: DeliveryContext, outcome: AttemptOutcome, now: number): Promise<void> | undefined;
  /** True while the event loop runs late: claim no more than one host's cap per turn, so requests (health first) get their turn. */
  busy?: () => boolean;
}

/** Delivers outbox events. `notify()` (the {@link OutboxSignal}) wakes it at once after a commit. */
export interface Dispatcher extends OutboxSignal {
  /** Lease owner id of this dispatcher. */
  readonly id: string;
  /** Claims what is due now, attempts it, and resolves when those attempts are settled. */
  runOnce(): Promise<number>;
  /** Repeats {@link runOnce} until nothing is due at the current clock time. */
  drain(): Promise<void>;
  start(): void;
  /** Stops claiming, gives the claimed-ahead deliveries back at once, and waits up to the grace for attempts in flight; false when some were still out (their leases expire). */
  stop(): Promise<boolean>;
  /** Attempts being sent now. */
  inFlight(): number;
  /** Claimed deliveries waiting in the local queue for a free slot. */
  queued(): number;
}
