import { withOpenCache } from '../crypto/secretBox.js';
import { isPostgres } from '../db/dialect.js';
import { monotonicClock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { createPollLoop } from '../lib/pollLoop.js';
import { yieldToLoop } from '../lib/yieldToLoop.js';
import { createAttempter } from './dispatch/attempt.js';
import { createClaimPolicy, turnClaims } from './dispatch/claimPolicy.js';
import { createLocalQueue, type HeldDelivery } from './dispatch/localQueue.js';
import { createSettleBatcher } from './dispatch/settleBatcher.js';
import type { Dispatcher, DispatcherDeps } from './dispatch/types.js';
import type { AttemptOutcome } from './httpClient.js';
import { maxAttempts } from './schedule.js';
import { settleAndClaim } from './settleAndClaim.js';
import { createEndpointPace } from './endpointPace.js';
import type { ClaimedDelivery } from './sql/claimWork.js';
import { releaseClaim, releaseClaims } from './sql/settleDeliveries.js';

export type { Dispatcher, DispatcherDeps, DispatcherOptions } from './dispatch/types.js';

/** A throttled delivery starts within this long of its claim (its send slot) or goes back unsent (sql/throttle.ts). */
const SLOT_SLACK_MS = 25;

/**
 * The dispatcher (docs/architecture.md, "Webhook delivery"), composed of named stages in
 * `dispatch/`: the claim policy (when a turn searches, adopts handed-over deliveries, fails spent
 * ones; which claims it makes), the local queue (what is held, queued and sent, with its host,
 * owner and endpoint counters), the settle batcher (finished attempts settled together) and the
 * attempt (sign, breaker, HTTP). Here they are put together: a turn is one write transaction
 * (`settleAndClaim`) that settles the batch and claims the next work; a queued delivery is sent only
 * while half its lease remains, otherwise given back under its token and never sent under a stale one.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, breakers, options } = deps;
  // Lease times (claims, settles) never go backwards; see monotonicClock.
  const clock = monotonicClock(deps.clock);
  const id = newId('dsp', 8);
  const log = deps.logger.child({ component: 'webhook-dispatcher', dispatcherId: id });
  const attempts = maxAttempts(options.retrySchedule);
  const lookahead = options.lookahead ?? Math.ceil(options.maxInFlight / 4);
  const stopGraceMs = options.stopGraceMs ?? 5_000;
  const perEndpointCap = options.maxInFlightPerEndpoint ?? options.maxInFlightPerHost;
  const perOwnerCap = Math.min(options.maxInFlight, options.maxInFlightPerOwner ?? options.maxInFlight - Math.floor(options.maxInFlight / 4));
  const pace = createEndpointPace(perEndpointCap);
  const prefetch = options.prefetchPerHost ?? options.maxInFlightPerHost;
  const local = createLocalQueue({ maxInFlight: options.maxInFlight, maxInFlightPerHost: options.maxInFlightPerHost, perOwnerCap, lookahead, prefetch, capOf: (e) => pace.capOf(e) });
  const attempter = createAttempter({ db, owner: id, clock, logger: log, box: withOpenCache(deps.secretBox), client: deps.client, breakers, pace, leaseMs: options.leaseMs });
  /** The turns (settle + claim transactions) run one after another. */
  let chain: Promise<unknown> = Promise.resolve();
  let stopping = false;
  /** Past the stop's grace: late attempts neither settle nor log (their leases expire). */
  let closed = false;

  const poll = createPollLoop({
    logger: log,
    what: 'claiming webhook deliveries',
    intervalMs: options.pollIntervalMs,
    turn: async () => (void (await turn(true, false)), false),
    // Let the completions and commits of this turn of the event loop arrive first, so one claim serves all the slots they freed.
    afterSleep: yieldToLoop,
  });
  const policy = createClaimPolicy({ everyTurnClaims: isPostgres(db), pollIntervalMs: options.pollIntervalMs, wake: () => poll.wake(), now: () => clock.now() });
  const settles = createSettleBatcher({
    youngOut: () => local.youngOut(),
    stopping: () => stopping,
    flush: () =>
      void turn(poll.isRunning() && !stopping, false).catch((error: unknown) => {
        log.error({ err: error }, 'settling webhook attempts failed');
        poll.wake(); // claim again on the loop, which backs off while the database fails
      }),
  });

  function turn(claim: boolean, force: boolean): Promise<HeldDelivery[]> {
    const run = chain.then(() => turnNow(claim, force));
    chain = run.catch(() => undefined);
    return run;
  }

  /** Settles what finished and, when `claim`, leases what was handed over or searches (see the claim policy) — one transaction. */
  async function turnNow(claim: boolean, force: boolean): Promise<HeldDelivery[]> {
    const batch = settles.take();
    const plan = policy.plan(claim && !stopping, force);
    let prepError: unknown;
    if (plan.search || plan.adopt) {
      try {
        await breakers.load();
        await breakers.refresh();
      } catch (error) {
        prepError = error;
        policy.unprepared(plan);
      }
    }
    const now = plan.now;
    const room = options.maxInFlight + lookahead - (local.held() - batch.length);
    const ownerHeld = plan.search || plan.adopt ? local.heldByOwner(new Set(batch.map((s) => s.input.delivery.id))) : undefined;
    // A forced turn (runOnce, drain) claims only what it can send now; the running loop leases ahead.
    const base = { owner: id, now, leaseMs: options.leaseMs, perHostCap: options.maxInFlightPerHost, perEndpointCap, prefetch: force ? 0 : prefetch, endpointCaps: pace.lowered(), perOwnerCap: perOwnerCap + lookahead, ownerHeld, maxAttempts: attempts };
    const bound = (n: number) => (deps.busy?.() ? Math.min(n, options.maxInFlightPerHost) : n);
    const { claims, trials, generalLimit, offerArgs } = turnClaims({ plan, breakers, room, bound, base, running: () => local.lapsing(now, options.leaseMs) });
    const spentDue = policy.spentDue(plan);
    if (batch.length === 0 && claims.length === 0 && !offerArgs && !spentDue) {
      if (prepError !== undefined) throw prepError;
      return [];
    }
    policy.ran(plan, spentDue);
    const out = await settleAndClaim(db, {
      settles: batch.map((b) => b.input),
      offers: offerArgs,
      failSpent: spentDue ? { now, maxAttempts: attempts, running: local.lapsing(now, options.leaseMs) } : undefined,
      claims,
    });
    batch.forEach((b, i) => {
      const result = out.results[i] ?? 'lease_lost';
      if (result instanceof Error) b.reject(result);
      else b.resolve(result);
      policy.settled(result instanceof Error ? 'error' : result, b.ordered);
    });
    for (const s of out.spent) log.warn({ deliveryId: s.id, attempts: s.attempts }, 'webhook delivery failed: its last attempt was never settled');
    for (const allowance of out.allowances) local.allow(allowance);
    const claimed: HeldDelivery[] = [];
    trials.forEach((endpoint, i) => {
      const [row] = out.claimed[i] ?? [];
      if (row) claimed.push(enqueue(row, true));
      else breakers.cancelTrial(endpoint);
    });
    for (const row of out.claimed[trials.length] ?? []) claimed.push(enqueue(row, false));
    for (const row of out.adopted) claimed.push(enqueue(row, false));
    const got = out.claimed[trials.length]?.length ?? 0; // (the queue now holds what this turn claimed)
    const cutShort = () => trials.length > 0 || generalLimit === 0 || got >= generalLimit || breakers.blockedEndpoints().length > 0 || local.atSomeCap();
    const again = policy.finished(plan, { offersLeft: out.offersLeft, offersWaiting: out.offersWaiting, willSettle: local.held() > 0, failed: out.error !== undefined, cutShort });
    if (again && prepError === undefined && !stopping && poll.isRunning()) poll.wake();
    startQueued();
    if (out.error !== undefined) throw out.error;
    if (prepError !== undefined) throw prepError;
    return claimed;
  }

  function enqueue(row: ClaimedDelivery, trial: boolean): HeldDelivery {
    if (row.ctx.rateLimitPerSecond !== null) policy.wakeForSlot(row.ctx.rateLimitPerSecond);
    return local.hold(row, trial, clock.now());
  }

  /** Sends queued deliveries while slots are free. */
  function startQueued(): void {
    for (let item = closed ? undefined : local.next(); item; item = closed ? undefined : local.next()) start(item);
  }

  function start(item: HeldDelivery): void {
    const now = clock.now();
    // Too little of the lease is left for a whole attempt: another claim may take it over mid-flight.
    const stale = item.leaseExpiresAt - now < options.leaseMs / 2;
    // A throttled delivery that waited past its slot goes back unsent: sent now it could land too close to the next slot.
    const lateForSlot = item.ctx.rateLimitPerSecond !== null && now - item.claimedAt > SLOT_SLACK_MS;
    // (A breaker that opened after the claim: the delivery goes back without spending an attempt.)
    if (stale || lateForSlot || (!item.trial && !breakers.admits(item.endpoint))) return giveBack(item);
    local.began(item);
    void run(item, now);
  }

  /** Attempts and settles a delivery; never rejects. (One async function: a .catch and .finally per delivery were two more promises and closures.) */
  async function run(item: HeldDelivery, now: number): Promise<void> {
    try {
      await attempt(item, now);
    } catch (error) {
      // The lease stays and expires; the delivery is claimed again, or failed once its attempts are spent.
      if (!closed) log.error({ err: error, deliveryId: item.id }, 'webhook attempt could not be settled');
    } finally {
      if (item.trial) breakers.cancelTrial(item.endpoint);
      item.finish();
    }
  }

  function giveBack(item: HeldDelivery): void {
    releaseClaim(db, { id: item.id, owner: id, token: item.token }, clock.now())
      .catch((error: unknown) => log.warn({ err: error, deliveryId: item.id }, 'could not give a claimed webhook delivery back; its lease will expire'))
      .finally(() => {
        if (item.trial) breakers.cancelTrial(item.endpoint);
        item.finish();
      });
  }

  async function attempt(item: HeldDelivery, startedAt: number): Promise<void> {
    const { ctx } = item;
    let outcome: AttemptOutcome;
    try {
      outcome = await attempter.send(item, startedAt);
    } finally {
      local.ended(item);
      startQueued(); // a slot is free: the next claimed-ahead delivery goes out at once
    }
    if (closed) return;
    const delivery = { id: item.id, launch_id: item.launchId, event_id: item.eventId, attempt_count: item.attempt, lease_token: item.token };
    const result = await settles.settle({ delivery, owner: id, launchOwner: ctx.owner, outcome, startedAt, now: clock.now(), schedule: options.retrySchedule, endpointId: ctx.endpointId }, ctx.ordered);
    const after = result === 'lease_lost' ? undefined : deps.afterAttempt?.(ctx, outcome, clock.now());
    if (after) await after.catch((error: unknown) => log.warn({ err: error, deliveryId: item.id }, 'endpoint health update failed'));
    attempter.log(item, outcome, result);
  }

  async function runOnce(): Promise<number> {
    const claimed = await turn(true, true);
    await Promise.all(claimed.map((item) => item.done));
    return claimed.length;
  }

  return {
    id,
    notify(handoff) {
      policy.notify(handoff);
      poll.wake();
    },
    runOnce,
    async drain() {
      for (let round = 0; round < 100_000; round++) {
        const n = await runOnce();
        if (n === 0 && local.held() === 0) return;
        if (n === 0) await Promise.race(local.heldItems().map((item) => item.done));
      }
      throw new Error('drain did not finish');
    },
    start() {
      stopping = false;
      closed = false;
      policy.start();
      poll.start();
    },
    async stop() {
      stopping = true;
      policy.stop();
      await poll.stop();
      await chain;
      // What was claimed ahead and never sent goes back at once, under its tokens.
      const unsent = local.takeQueued();
      if (unsent.length > 0) {
        await releaseClaims(db, unsent.map((item) => ({ id: item.id, owner: id, token: item.token })), clock.now()).catch((error: unknown) => log.warn({ err: error, count: unsent.length }, 'could not give claimed webhook deliveries back; their leases will expire'));
        for (const item of unsent) {
          if (item.trial) breakers.cancelTrial(item.endpoint);
          item.finish();
        }
      }
      const clean = await local.settledWithin(stopGraceMs);
      if (!clean) {
        closed = true;
        log.warn({ inFlight: local.held() }, 'webhook attempts still in flight at shutdown; their leases expire and they are attempted again');
      }
      return clean;
    },
    inFlight: local.sending,
    queued: local.queued,
  };
}
