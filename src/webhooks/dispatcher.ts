import type { SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import type { DeliveryRow } from '../db/schema.js';
import { monotonicClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { createPollLoop } from '../lib/pollLoop.js';
import type { Logger } from '../lib/logger.js';
import type { BreakerRegistry } from './breakerRegistry.js';
import { hostOfEndpoint } from './endpointKey.js';
import type { AttemptOutcome, WebhookHttpClient } from './httpClient.js';
import type { OutboxSignal } from './outbox.js';
import { maxAttempts } from './schedule.js';
import { createSettleBatcher } from './settleBatcher.js';
import { buildDeliveryHeaders } from './signature.js';
import { claimDueDeliveries } from './sql/claimDeliveries.js';
import { failSpentDeliveries } from './sql/failSpentDeliveries.js';
import { loadDeliveryContext, type DeliveryContext } from './sql/deliveryQueries.js';
import { signingSecrets } from './endpoints/signing.js';
import { releaseClaim } from './sql/settleDeliveries.js';

export interface DispatcherOptions {
  retrySchedule: readonly number[];
  maxInFlight: number;
  maxInFlightPerHost: number;
  leaseMs: number;
  pollIntervalMs: number;
}

export interface DispatcherDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  secretBox: SecretBox;
  client: WebhookHttpClient;
  breakers: BreakerRegistry;
  options: DispatcherOptions;
  /** Runs after each settled attempt (webhook endpoint health: a 410 or a long failing run disables it). */
  afterAttempt?(ctx: DeliveryContext, outcome: AttemptOutcome, now: number): Promise<void>;
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
  /** Stops claiming and waits for in-flight attempts to settle. */
  stop(): Promise<void>;
  inFlight(): number;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, breakers, options } = deps;
  // Lease times (claims, settles) never go backwards; see monotonicClock.
  const clock = monotonicClock(deps.clock);
  const id = newId('dsp', 8);
  const log = deps.logger.child({ component: 'webhook-dispatcher', dispatcherId: id });
  /** Deliveries being attempted now, by id: never claimed again by this dispatcher meanwhile. */
  const running = new Set<string>();
  const tasks = new Set<Promise<void>>();
  const attempts = maxAttempts(options.retrySchedule);
  const poll = createPollLoop({
    logger: log,
    what: 'claiming webhook deliveries',
    intervalMs: options.pollIntervalMs,
    // The loop does not await the attempts: their completion wakes it through `track`.
    turn: async () => (void (await claimBatch()), false),
    // Let the completions and commits of this turn of the event loop arrive first, so one claim
    // serves all the slots they freed instead of one claim per finished attempt.
    afterSleep: () => new Promise<void>((resolve) => setImmediate(resolve)),
  });

  const free = () => options.maxInFlight - tasks.size;
  const settler = createSettleBatcher(db);

  async function attempt(row: DeliveryRow, trial: boolean): Promise<void> {
    const alog = log.child({ deliveryId: row.id, launchId: row.launch_id, eventId: row.event_id, host: row.host, attempt: row.attempt_count });
    if (!trial && !breakers.admits(row.endpoint)) {
      // The breaker opened after the claim: give the delivery back without spending an attempt.
      await releaseClaim(db, { id: row.id, owner: id, token: row.lease_token }, clock.now());
      return;
    }
    const ctx = await loadDeliveryContext(db, row.id);
    if (!ctx) throw new Error(`delivery ${row.id} has no event or launch`);
    const startedAt = clock.now();
    let secrets: string[] | undefined;
    try {
      secrets = signingSecrets(ctx, startedAt, deps.secretBox);
    } catch {
      secrets = undefined;
    }
    let outcome: AttemptOutcome;
    if (secrets === undefined) {
      // Not the endpoint's fault, so it does not count against the host's breaker.
      outcome = { ok: false, statusCode: null, durationMs: 0, responseBody: null, errorClass: 'secret_unavailable', errorMessage: 'webhook secret cannot be decrypted with SECRET_KEY' };
    } else {
      const headers = buildDeliveryHeaders({
        secrets,
        scheme: ctx.scheme,
        body: ctx.body,
        event: ctx.event,
        eventId: ctx.eventId,
        attempt: row.attempt_count,
        requestId: ctx.requestId ?? newId('req'),
        timestampSeconds: Math.floor(startedAt / 1000),
      });
      outcome = await breakers.execute(row.endpoint, trial, () => deps.client.send({ url: row.url, body: ctx.body, headers }));
    }
    const result = await settler.settle({ delivery: row, owner: id, launchOwner: ctx.owner, outcome, startedAt, now: clock.now(), schedule: options.retrySchedule });
    if (deps.afterAttempt && result !== 'lease_lost') {
      await deps.afterAttempt(ctx, outcome, clock.now()).catch((error: unknown) => alog.warn({ err: error }, 'endpoint health update failed'));
    }
    const fields = { event: ctx.event, trial, statusCode: outcome.statusCode, durationMs: outcome.durationMs, errorClass: outcome.errorClass, result };
    if (outcome.ok) alog.info(fields, 'webhook delivered');
    else alog.warn({ ...fields, error: outcome.errorMessage, detail: outcome.logDetail }, 'webhook attempt failed');
  }

  function launch(row: DeliveryRow, trial: boolean): Promise<void> {
    running.add(row.id);
    const task = attempt(row, trial)
      .catch((error: unknown) => {
        // The lease stays and expires; the delivery is claimed again, or failed once its attempts are spent.
        log.error({ err: error, deliveryId: row.id }, 'webhook attempt could not be settled');
      })
      .finally(() => {
        if (trial) breakers.cancelTrial(row.endpoint);
        running.delete(row.id);
        tasks.delete(task);
      });
    tasks.add(task);
    poll.track(task); // its end wakes the loop: a slot is free, claim more without waiting for the poll
    return task;
  }

  async function claimBatch(): Promise<Promise<void>[]> {
    await breakers.load();
    await breakers.refresh();
    const spent = await failSpentDeliveries(db, { now: clock.now(), maxAttempts: attempts, running: [...running] });
    for (const s of spent) log.warn({ deliveryId: s.id, attempts: s.attempts }, 'webhook delivery failed: its last attempt was never settled');
    const started: Promise<void>[] = [];
    const base = { owner: id, leaseMs: options.leaseMs, perHostCap: options.maxInFlightPerHost, maxAttempts: attempts };
    for (const endpoint of breakers.trialEndpoints()) {
      if (free() <= 0 || !breakers.beginTrial(endpoint)) continue;
      const trialArgs = { ...base, now: clock.now(), limit: 1, excludeEndpoints: [], onlyHost: hostOfEndpoint(endpoint), onlyEndpoint: endpoint, running: [...running] };
      const [row] = await claimDueDeliveries(db, trialArgs).catch((e: unknown) => {
        breakers.cancelTrial(endpoint);
        throw e;
      });
      if (row) started.push(launch(row, true));
      else breakers.cancelTrial(endpoint);
    }
    const limit = deps.busy?.() ? Math.min(free(), options.maxInFlightPerHost) : free();
    const rows = await claimDueDeliveries(db, { ...base, now: clock.now(), limit, excludeEndpoints: breakers.blockedEndpoints(), running: [...running] });
    for (const row of rows) started.push(launch(row, false));
    return started;
  }

  async function runOnce(): Promise<number> {
    const started = await claimBatch();
    await Promise.all(started);
    return started.length;
  }

  return {
    id,
    notify() {
      poll.wake();
    },
    runOnce,
    async drain() {
      for (let round = 0; round < 100_000; round++) {
        const n = await runOnce();
        if (n === 0 && tasks.size === 0) return;
        if (n === 0) await Promise.race(tasks);
      }
      throw new Error('drain did not finish');
    },
    start() {
      poll.start();
    },
    async stop() {
      await poll.stop();
    },
    inFlight() {
      return tasks.size;
    },
  };
}
