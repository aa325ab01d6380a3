import type { ClaimedDelivery } from '../sql/claimWork.js';

/** A delivery this dispatcher holds a lease on: queued, being sent, or being settled. */
export interface HeldDelivery extends ClaimedDelivery {
  /** A breaker's half-open trial: queued first, sent as soon as its host and endpoint have room. */
  trial: boolean;
  /** When it was claimed (the lease clock): a throttled delivery's send slot. */
  claimedAt: number;
  /** Resolves when the delivery's attempt is settled, or it was given back. */
  done: Promise<void>;
  /** Lets the delivery go (LocalQueue.release) and resolves `done`. */
  finish(): void;
}

/**
 * A held delivery. Its `done` promise is made only when something waits for it (runOnce, drain,
 * stop): the running loop never does, and a promise and its resolver per delivery were a visible
 * part of the dispatcher's allocations.
 */
export class Held implements HeldDelivery {
  readonly id: string;
  readonly launchId: string;
  readonly eventId: string;
  readonly url: string;
  readonly host: string;
  readonly endpoint: string;
  readonly attempt: number;
  readonly token: number;
  leaseExpiresAt: number;
  readonly ctx: ClaimedDelivery['ctx'];
  #done: Promise<void> | undefined;
  #resolve: (() => void) | undefined;
  #finished = false;

  constructor(
    row: ClaimedDelivery,
    readonly trial: boolean,
    readonly claimedAt: number,
    private readonly onFinish: (item: HeldDelivery) => void,
  ) {
    this.id = row.id;
    this.launchId = row.launchId;
    this.eventId = row.eventId;
    this.url = row.url;
    this.host = row.host;
    this.endpoint = row.endpoint;
    this.attempt = row.attempt;
    this.token = row.token;
    this.leaseExpiresAt = row.leaseExpiresAt;
    this.ctx = row.ctx;
  }

  get done(): Promise<void> {
    this.#done ??= this.#finished ? Promise.resolve() : new Promise<void>((resolve) => (this.#resolve = resolve));
    return this.#done;
  }

  finish(): void {
    this.#finished = true;
    this.onFinish(this);
    this.#resolve?.();
  }
}

