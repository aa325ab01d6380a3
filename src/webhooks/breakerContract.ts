import type { BreakerSnapshot } from '../lib/breaker.js';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { BreakerPolicy } from './breakerState.js';
import type { BreakerInfo } from './breakerViews.js';
import type { AttemptOutcome } from './httpClient.js';

/* The breaker registry's contract (its implementation: breakerRegistry.ts). */

export type BreakerSnapshotEntry = BreakerSnapshot;

/**
 * One breaker per webhook endpoint: scheme, host, port and path (docs/delivery.md), so customers sharing
 * a host do not stall each other. Health and metrics see them aggregated by host name.
 */
export interface BreakerRegistry {
  /**
   * Reads the breakers from the database, the authority every instance shares, unless the last read
   * is fresher than `syncMs` (a failed read is tried again by the next call).
   */
  load(): Promise<void>;
  /** Makes the next {@link load} read the database whatever its age (another instance changed a breaker). */
  invalidate(): void;
  /**
   * Moves open breakers whose reset timeout has elapsed (by the injected clock) to half-open, and
   * takes the trial lease of half-open ones no other instance holds.
   */
  refresh(): Promise<void>;
  /** Endpoints whose breaker is not closed: ordinary claims skip them, so waiting costs no attempts. */
  blockedEndpoints(): string[];
  /** Half-open endpoints whose trial lease this instance holds and whose single trial slot is free. */
  trialEndpoints(): string[];
  /** Takes the half-open trial slot of `endpoint`; false when it is taken or the endpoint is not half-open. */
  beginTrial(endpoint: string): boolean;
  /** Frees a trial slot that was taken but not used (nothing was due, or the claim was released). */
  cancelTrial(endpoint: string): void;
  /** True when an ordinary (non-trial) attempt to `endpoint` may go out now. */
  admits(endpoint: string): boolean;
  /** Runs one attempt through the endpoint's opossum breaker and records what it says about the host. */
  execute(endpoint: string, trial: boolean, attempt: () => Promise<AttemptOutcome>): Promise<AttemptOutcome>;
  /** `{host: {state, failures}}` for /api/health: a host's endpoints aggregated (the worst state, the most failures). */
  snapshot(): Record<string, BreakerSnapshotEntry>;
  /** The aggregate of one host's endpoints, as in {@link snapshot}. */
  stateOf(host: string): BreakerSnapshotEntry;
  /** Every endpoint's breaker, as of now. */
  list(): BreakerInfo[];
  /**
   * Closes breakers with zero failures (an operator's reset): the one of an endpoint key, or every
   * endpoint of a host name. Returns the endpoints reset (none for an unknown key).
   */
  reset(key: string): Promise<string[]>;
  shutdown(): void;
}

export interface BreakerRegistryDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  policy: BreakerPolicy;
  /** This instance's id in the trial lease (default: a fresh one). */
  owner?: string;
  /** How long a read of the breakers table is trusted before the next claim reads it again (default 1 s). */
  syncMs?: number;
  /** How long the half-open trial lease lasts; at least an attempt's longest run (default 60 s). */
  trialLeaseMs?: number;
  /** Runs after this instance changed a breaker's state (the service tells the other instances). */
  onChange?: () => void;
  /** A closed breaker with no failures and no attempt for this long is dropped from memory (default 10 min). */
  idleEvictMs?: number;
  /**
   * Times breakers by the database server's clock (PostgreSQL, several instances): when a breaker
   * opened, when its reset timeout ends, when a trial lease runs out — one clock for every instance,
   * whatever each machine's says. The registry's time is then its clock plus the offset to the
   * server's `clock_timestamp()`, measured again with every read of the breakers.
   */
  databaseClock?: boolean;
}
