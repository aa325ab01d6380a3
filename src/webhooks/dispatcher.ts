import { performance } from 'node:perf_hooks';
import { withOpenCache, type SecretBox } from '../crypto/secretBox.js';
import type { Db } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import { monotonicClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { createPollLoop } from '../lib/pollLoop.js';
import { yieldToLoop } from '../lib/yieldToLoop.js';
import { openSpan, tracingOn, type SpanHandle } from '../lib/tracing.js';
import type { Logger } from '../lib/logger.js';
import type { BreakerRegistry } from './breakerRegistry.js';
import { hostOfEndpoint } from './endpointKey.js';
import type { AttemptOutcome, WebhookHttpClient } from './httpClient.js';
import type { DeliveryHandoff, OutboxSignal } from './outbox.js';
import { maxAttempts } from './schedule.js';
import type { SettleInput, SettleResult } from './settle.js';
import { settleAndClaim } from './settleAndClaim.js';
import { buildDeliveryHeaders } from './signature.js';
import { createEndpointPace } from './endpointPace.js';
import type { ClaimArgs } from './sql/claimDeliveries.js';
import type { ClaimedDelivery, DeliveryOffer } from './sql/claimWork.js';
import type { LeaseOfferedArgs } from './sql/leaseOffered.js';
import { eventTraceParent, type DeliveryContext } from './sql/deliveryQueries.js';
import { signingSecrets } from './endpoints/signing.js';
import { releaseClaim, releaseClaims, renewClaim } from './sql/settleDeliveries.js';
import { slotSpacingMs } from './sql/throttle.js';

export interface DispatcherOptions {
  retrySchedule: readonly number[];
  maxInFlight: number;
  maxInFlightPerHost: number;
  /** Per-endpoint in-flight cap over every dispatcher's live leases (default: the per-host cap), lowered while an endpoint answers slowly (endpointPace.ts). */
  maxInFlightPerEndpoint?: number;
  /**
   * Attempts of one owner this dispatcher sends at once, at most (default: `maxInFlight` less a
   * quarter of it, rounded down), so slots stay free for other owners while one owner's receivers
   * answer slowly; it holds at most `lookahead` more claimed ahead.
   */
  maxInFlightPerOwner?: number;
  leaseMs: number;
  pollIntervalMs: number;
  /** Deliveries claimed ahead beyond the free in-flight slots, waiting in the local queue (default a quarter of `maxInFlight`). */
  lookahead?: number;
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
  /**
   * Stops claiming, gives the claimed-ahead deliveries that were not sent back at once (another
   * dispatcher may take them), and waits up to the grace for the attempts in flight to settle.
   * Resolves false when some were still out: their leases expire and they are attempted again.
   */
  stop(): Promise<boolean>;
  /** Attempts being sent now. */
  inFlight(): number;
  /** Claimed deliveries waiting in the local queue for a free slot. */
  queued(): number;
}

/** Settles at most this many attempts per transaction. */
const MAX_SETTLE_BATCH = 64;
/** The longest a finished attempt waits for others to be settled with. */
const FLUSH_WAIT_MS = 2;
/** An attempt out for less than this is expected back soon: finished ones wait for it (at most FLUSH_WAIT_MS). */
const YOUNG_MS = 10;
/** How often spent deliveries (last attempt never settled, lease expired) are looked for. */
const SPENT_CHECK_MS = 1_000;
/** Offers waiting for a turn, at most; beyond that the table is searched (an ordinary claim finds them too). */
const MAX_OFFERED = 256;
/**
 * A throttled endpoint's delivery starts within this long of its claim (its send slot) or is given
 * back unsent, so a delay in our queue never squeezes two slots together (sql/throttle.ts).
 */
const SLOT_SLACK_MS = 25;

interface Item extends ClaimedDelivery {
  trial: boolean;
  /** When it was claimed (the lease clock): a throttled delivery's send slot. */
  claimedAt: number;
  /** Resolves when the item's attempt is settled, or it was given back. */
  done: Promise<void>;
  finish(): void;
}

interface PendingSettle {
  input: SettleInput;
  /** Its endpoint orders each launch's events: once settled, the launch's next may be claimable. */
  ordered: boolean;
  resolve(result: SettleResult): void;
  reject(error: unknown): void;
}

/**
 * The dispatcher (docs/delivery.md, docs/architecture.md). One write transaction per turn settles
 * every attempt that finished since the last one and claims the next work (`settleAndClaim`); a
 * claim returns everything an attempt needs (url, body, sealed secrets, attempt number, fencing
 * token), secrets are decrypted once and remembered, and up to `lookahead` claimed deliveries wait
 * in a local queue so a freed slot is refilled without a database round trip (graphile-worker's
 * local queue). A queued delivery is sent only while at least half its lease remains; otherwise it
 * is given back under its token and never sent under a stale one. The per-host cap is enforced by
 * the claim over every dispatcher's live leases, queued ones included; the global cap bounds what
 * is being sent.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, breakers, options } = deps;
  // Lease times (claims, settles) never go backwards; see monotonicClock.
  const clock = monotonicClock(deps.clock);
  const id = newId('dsp', 8);
  const log = deps.logger.child({ component: 'webhook-dispatcher', dispatcherId: id });
  const box = withOpenCache(deps.secretBox);
  const attempts = maxAttempts(options.retrySchedule);
  const lookahead = options.lookahead ?? Math.ceil(options.maxInFlight / 4);
  const stopGraceMs = options.stopGraceMs ?? 5_000;
  const perEndpointCap = options.maxInFlightPerEndpoint ?? options.maxInFlightPerHost;
  const perOwnerCap = Math.min(options.maxInFlight, options.maxInFlightPerOwner ?? options.maxInFlight - Math.floor(options.maxInFlight / 4));
  /** Each endpoint's cap, lowered while it answers slowly. */
  const pace = createEndpointPace(perEndpointCap);

  /**
   * Every delivery this dispatcher holds a lease on (queued, being sent, being settled): never
   * claimed again by it while that lease lasts (the claims skip live leases, and list the held
   * deliveries whose lease has run out, see `lapsing`).
   */
  const held = new Map<string, Item>();
  /** Claimed, not yet sent, in claim order. */
  const queue: Item[] = [];
  let sending = 0;
  const sendingByHost = new Map<string, number>();
  const sendingByOwner = new Map<string, number>();
  /** When each attempt being sent now was started (performance.now()). */
  const sentAt = new Map<Item, number>();
  const settles: PendingSettle[] = [];
  let flushScheduled = false;
  let flushTimer: NodeJS.Timeout | undefined;
  /** The turns (settle + claim transactions) run one after another. */
  let chain: Promise<unknown> = Promise.resolve();
  let nextSpentCheckAt = -Infinity;
  let stopping = false;
  /** Past the stop's grace: late attempts neither settle nor log (their leases expire). */
  let closed = false;
  /**
   * Whether the ordinary claim (the search of the table) may find work: raised by `notify()` without
   * a complete handoff (a commit added deliveries this dispatcher was not told about), kept while
   * the last claim was cut short (it filled its limit, had no room or was throttled, a host was at
   * its cap, a breaker was not closed) or while a settle or an offer left a delivery pending,
   * cleared by a claim that took everything there was. On SQLite this process is the only writer,
   * so every delivery it could claim was announced by `notify()` — most of them handed over, see
   * `offered` — or comes due later (a retry), and the ordinary claim runs only when it may find
   * something, and at least once a poll interval for retries coming due. Before, every turn
   * searched: while events arrived one at a time (a launch's steps) most searches found nothing, and
   * each cost the lane walk and the candidate read (~0.15 ms). On PostgreSQL other instances add
   * deliveries unannounced: every claiming turn searches, and offers are not taken.
   */
  let claimable = true;
  /** Counts `notify()` calls that raised `claimable`: a claim clears it only when none came while it ran. */
  let notified = 0;
  const everyTurnClaims = isPostgres(db);
  /**
   * Deliveries committed by this process and handed over with their commit's `notify(handoff)`, with
   * what their first attempt needs: the next turn leases them by id (sql/leaseOffered.ts) instead of
   * searching the table and reading their event, launch and secrets. A turn whose ordinary claim
   * runs drops them: it finds them in the table.
   */
  const offered: DeliveryOffer[] = [];
  /** When the ordinary claim last ran (the lease clock). */
  let lastSearchAt = -Infinity;
  /** Wakes the claim for a throttled endpoint's next send slot (sql/throttle.ts), the earliest one. */
  let slotTimer: NodeJS.Timeout | undefined;
  let slotAt = Infinity;

  const poll = createPollLoop({
    logger: log,
    what: 'claiming webhook deliveries',
    intervalMs: options.pollIntervalMs,
    turn: async () => (void (await turn(true, false)), false),
    // Let the completions and commits of this turn of the event loop arrive first, so one claim
    // serves all the slots they freed.
    afterSleep: yieldToLoop,
  });

  function turn(claim: boolean, force: boolean): Promise<Item[]> {
    const run = chain.then(() => turnNow(claim, force));
    chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Settles what finished and, when `claim`, leases what was handed over or (`force`, or when it may
   * find something, see `claimable`) fails spent deliveries and claims more — one transaction.
   */
  async function turnNow(claim: boolean, force: boolean): Promise<Item[]> {
    const batch = settles.splice(0, MAX_SETTLE_BATCH);
    if (settles.length > 0) scheduleFlush();
    const claims: ClaimArgs[] = [];
    const trials: string[] = [];
    let prepError: unknown;
    claim &&= !stopping;
    const notifiedBefore = notified;
    /** The ordinary claim's limit; 0 when it had no room or was throttled. */
    let generalLimit = 0;
    const now = clock.now();
    let search = claim && (force || claimable || everyTurnClaims || now - lastSearchAt >= options.pollIntervalMs);
    const offers = offered.splice(0);
    let adopt = claim && !search && offers.length > 0;
    if (!claim && offers.length > 0) claimable = true; // left in the table for a later claim
    if (search || adopt) {
      try {
        await breakers.load();
        await breakers.refresh();
      } catch (error) {
        prepError = error;
        if (adopt) claimable = true;
        search = adopt = false;
      }
    }
    let offerArgs: LeaseOfferedArgs | undefined;
    if (search || adopt) {
      let room = options.maxInFlight + lookahead - (held.size - batch.length);
      const throttled = (n: number) => (deps.busy?.() ? Math.min(n, options.maxInFlightPerHost) : n);
      const caps = { perHostCap: options.maxInFlightPerHost, perEndpointCap, endpointCaps: pace.lowered(), perOwnerCap: perOwnerCap + lookahead, ownerHeld: heldByOwner(batch) };
      if (adopt) {
        const blocked = new Set(breakers.blockedEndpoints());
        offerArgs = { owner: id, now, leaseMs: options.leaseMs, ...caps, maxAttempts: attempts, limit: throttled(room), admits: (endpoint) => !blocked.has(endpoint), offers };
      } else {
        const base = { owner: id, now, leaseMs: options.leaseMs, ...caps, maxAttempts: attempts, running: lapsing(now) };
        for (const endpoint of breakers.trialEndpoints()) {
          if (room <= 0 || !breakers.beginTrial(endpoint)) continue;
          trials.push(endpoint);
          room -= 1;
          claims.push({ ...base, limit: 1, excludeEndpoints: [], onlyHost: hostOfEndpoint(endpoint), onlyEndpoint: endpoint });
        }
        const limit = throttled(room);
        generalLimit = limit < room ? 0 : limit; // 0: no room, or throttled (cut short either way)
        if (limit > 0) claims.push({ ...base, limit, excludeEndpoints: breakers.blockedEndpoints() });
      }
    }
    const spentDue = search && now >= nextSpentCheckAt;
    if (batch.length === 0 && claims.length === 0 && !offerArgs && !spentDue) {
      if (prepError !== undefined) throw prepError;
      return [];
    }
    if (spentDue) nextSpentCheckAt = now + SPENT_CHECK_MS;
    if (search) lastSearchAt = now;
    const out = await settleAndClaim(db, {
      settles: batch.map((b) => b.input),
      offers: offerArgs,
      failSpent: spentDue ? { now, maxAttempts: attempts, running: lapsing(now) } : undefined,
      claims,
    });
    batch.forEach((b, i) => {
      const result = out.results[i];
      if (result instanceof Error) b.reject(result);
      else b.resolve(result ?? 'lease_lost');
      if (result !== 'delivered' && result !== 'failed') claimable = true; // a retry, or an unsettled item
      if (b.ordered) claimable = true; // the launch's next event to that endpoint may go now
    });
    for (const s of out.spent) log.warn({ deliveryId: s.id, attempts: s.attempts }, 'webhook delivery failed: its last attempt was never settled');
    const claimed: Item[] = [];
    trials.forEach((endpoint, i) => {
      const [row] = out.claimed[i] ?? [];
      if (row) claimed.push(enqueue(row, true));
      else breakers.cancelTrial(endpoint);
    });
    for (const row of out.claimed[trials.length] ?? []) claimed.push(enqueue(row, false));
    for (const row of out.adopted) claimed.push(enqueue(row, false));
    if (offerArgs && (out.offersLeft > 0 || out.error !== undefined)) claimable = true;
    if (search && out.error === undefined && notified === notifiedBefore) {
      const got = out.claimed[trials.length]?.length ?? 0; // (held now counts what this turn claimed)
      claimable = trials.length > 0 || generalLimit === 0 || got >= generalLimit || breakers.blockedEndpoints().length > 0 || atSomeCap();
    } else if (!search && claimable && prepError === undefined && out.error === undefined && !stopping && poll.isRunning()) {
      poll.wake(); // this turn did not search, and left something to (a retry already due, an offer without a slot)
    }
    startQueued();
    if (out.error !== undefined) throw out.error;
    if (prepError !== undefined) throw prepError;
    return claimed;
  }

  /**
   * The held deliveries a claim could take back from this dispatcher: those whose lease has run
   * out, or will within half a lease (a margin for the database's lease clock on PostgreSQL). A
   * claim skips every other held one by its live lease already, so it need not list them: a
   * `not in (…)` of every held id cost the claim 20-27 us per row on SQLite (an ephemeral index
   * built per run), and the settling batch alone is eight ids.
   */
  function lapsing(now: number): string[] {
    const soon = now + options.leaseMs / 2;
    const ids: string[] = [];
    for (const item of held.values()) if (item.leaseExpiresAt <= soon) ids.push(item.id);
    return ids;
  }

  /**
   * Attempts that finished are settled together (and, while running, with the next claim) on the
   * next turn of the event loop once no attempt sent in the last {@link YOUNG_MS} is still out, or
   * after {@link FLUSH_WAIT_MS}: a turn's begin, lane walk and commit cost the same for one row as
   * for eight, so a fast receiver's answers, which arrive within a few ms of each other, share one.
   * An attempt out longer than that (a slow or dead receiver) does not hold the others' turn: one
   * customer's hanging endpoint must not slow another's deliveries.
   * (Settling once half of what was out had finished kept a fast receiver busy meanwhile, but on one
   * event loop that overlap bought less than the turns it doubled: 15 000 deliveries to one host,
   * three rounds alternating, 2120/2363/3060 -> 2252/2526/3220 per s.)
   */
  function scheduleFlush(): void {
    if (flushScheduled) return;
    if (!stopping && youngOut()) {
      flushTimer ??= setTimeout(() => {
        flushTimer = undefined;
        scheduleFlush();
        if (!flushScheduled) flushNow();
      }, FLUSH_WAIT_MS);
      return;
    }
    flushNow();
  }

  /**
   * Some host, endpoint or owner has as many deliveries held by this dispatcher as its cap allows:
   * its settles free slots a claim can fill.
   */
  function atSomeCap(): boolean {
    const byHost = new Map<string, number>();
    const byEndpoint = new Map<string, number>();
    const byOwner = new Map<string, number>();
    for (const item of held.values()) {
      const h = (byHost.get(item.host) ?? 0) + 1;
      const e = (byEndpoint.get(item.endpoint) ?? 0) + 1;
      const o = (byOwner.get(item.ctx.owner) ?? 0) + 1;
      if (h >= options.maxInFlightPerHost || e >= pace.capOf(item.endpoint) || o >= perOwnerCap + lookahead) return true;
      byHost.set(item.host, h);
      byEndpoint.set(item.endpoint, e);
      byOwner.set(item.ctx.owner, o);
    }
    return false;
  }

  /** Deliveries of each owner this dispatcher holds, those being settled in this turn left out (their slots are free once it commits). */
  function heldByOwner(settling: readonly PendingSettle[]): Map<string, number> {
    const gone = new Set(settling.map((s) => s.input.delivery.id));
    const byOwner = new Map<string, number>();
    for (const item of held.values()) {
      if (gone.has(item.id)) continue;
      byOwner.set(item.ctx.owner, (byOwner.get(item.ctx.owner) ?? 0) + 1);
    }
    return byOwner;
  }

  /** Some attempt sent less than YOUNG_MS ago is still out. */
  function youngOut(): boolean {
    const since = performance.now() - YOUNG_MS;
    for (const at of sentAt.values()) if (at > since) return true;
    return false;
  }

  function flushNow(): void {
    flushScheduled = true;
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = undefined;
    setImmediate(() => {
      flushScheduled = false;
      turn(poll.isRunning() && !stopping, false).catch((error: unknown) => {
        log.error({ err: error }, 'settling webhook attempts failed');
        poll.wake(); // claim again on the loop, which backs off while the database fails
      });
    });
  }

  function settle(input: SettleInput, ordered: boolean): Promise<SettleResult> {
    return new Promise<SettleResult>((resolve, reject) => {
      settles.push({ input, ordered, resolve, reject });
      scheduleFlush();
    });
  }

  /**
   * A throttled endpoint had a delivery claimed now: its next slot comes one spacing later, and the
   * claim must run then (nothing else would wake it before the poll interval).
   */
  function wakeForSlot(rate: number): void {
    const at = clock.now() + slotSpacingMs(rate) + 1;
    if (at >= slotAt || stopping) return;
    if (slotTimer) clearTimeout(slotTimer);
    slotAt = at;
    slotTimer = setTimeout(() => {
      slotTimer = undefined;
      slotAt = Infinity;
      notified += 1;
      claimable = true;
      poll.wake();
    }, at - clock.now());
    slotTimer.unref();
  }

  function enqueue(row: ClaimedDelivery, trial: boolean): Item {
    let finish: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (finish = resolve));
    if (row.ctx.rateLimitPerSecond !== null) wakeForSlot(row.ctx.rateLimitPerSecond);
    const item: Item = {
      ...row,
      trial,
      claimedAt: clock.now(),
      done,
      finish() {
        // A delivery given back, or settled with its retry already due, may have been claimed again
        // (by this dispatcher's next turn) before this item finished: that newer item stays held.
        if (held.get(row.id) === item) held.delete(row.id);
        finish();
      },
    };
    held.set(row.id, item);
    if (trial) start(item);
    else queue.push(item);
    return item;
  }

  /** Sends queued deliveries while slots are free. */
  function startQueued(): void {
    while (queue.length > 0 && sending < options.maxInFlight && !closed) {
      // The claim keeps a host's leases within its cap, so the head almost always fits; an owner
      // already sending its share waits, leaving the slot to the next owner's delivery.
      const index = queue.findIndex((item) => (sendingByHost.get(item.host) ?? 0) < options.maxInFlightPerHost && (sendingByOwner.get(item.ctx.owner) ?? 0) < perOwnerCap);
      if (index < 0) return;
      const [item] = queue.splice(index, 1);
      if (item) start(item);
    }
  }

  function start(item: Item): void {
    const now = clock.now();
    // Too little of the lease is left for a whole attempt: another claim may take it over
    // mid-flight. Give it back under its token instead of sending under a stale one.
    const stale = item.leaseExpiresAt - now < options.leaseMs / 2;
    // A throttled delivery that waited in the queue past its slot goes back unsent: sent now it could
    // land too close to the endpoint's next slot. Given back, no attempt is spent.
    const lateForSlot = item.ctx.rateLimitPerSecond !== null && now - item.claimedAt > SLOT_SLACK_MS;
    if (stale || lateForSlot || (!item.trial && !breakers.admits(item.endpoint))) {
      // (A breaker that opened after the claim: the delivery goes back without spending an attempt.)
      giveBack(item);
      return;
    }
    sending += 1;
    sendingByHost.set(item.host, (sendingByHost.get(item.host) ?? 0) + 1);
    sendingByOwner.set(item.ctx.owner, (sendingByOwner.get(item.ctx.owner) ?? 0) + 1);
    sentAt.set(item, performance.now());
    attempt(item, now)
      .catch((error: unknown) => {
        // The lease stays and expires; the delivery is claimed again, or failed once its attempts are spent.
        if (!closed) log.error({ err: error, deliveryId: item.id }, 'webhook attempt could not be settled');
      })
      .finally(() => {
        if (item.trial) breakers.cancelTrial(item.endpoint);
        item.finish();
      });
  }

  function giveBack(item: Item): void {
    releaseClaim(db, { id: item.id, owner: id, token: item.token }, clock.now())
      .catch((error: unknown) => log.warn({ err: error, deliveryId: item.id }, 'could not give a claimed webhook delivery back; its lease will expire'))
      .finally(() => {
        if (item.trial) breakers.cancelTrial(item.endpoint);
        item.finish();
      });
  }

  async function attempt(item: Item, startedAt: number): Promise<void> {
    const { ctx } = item;
    let outcome: AttemptOutcome;
    try {
      let secrets: string[] | undefined;
      try {
        secrets = signingSecrets(ctx, startedAt, box);
      } catch {
        secrets = undefined;
      }
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
          attempt: item.attempt,
          requestId: ctx.requestId ?? newId('req'),
          timestampSeconds: Math.floor(startedAt / 1000),
        });
        // Sent again at once (a stale pooled socket, our own stall) only under a lease that covers
        // a whole attempt, as at the start; after a stall past half of it, only once the lease is
        // renewed under this claim's token — another dispatcher may have taken the delivery over
        // and sent it meanwhile.
        const mayResend = () => resendable(item);
        // Tracing on: the attempt is a span under the event's context, and the delivery carries its own.
        const span = tracingOn() ? await attemptSpan(item) : undefined;
        if (span) headers.traceparent = span.traceparent;
        try {
          outcome = await breakers.execute(item.endpoint, item.trial, () => deps.client.send({ url: item.url, body: ctx.body, headers, mayResend }));
        } catch (error) {
          span?.end(error);
          throw error;
        }
        if (span) {
          span.setAttributes({ ...(outcome.statusCode === null ? {} : { 'http.response.status_code': outcome.statusCode }), ...(outcome.ok ? {} : { 'error.type': outcome.errorClass ?? 'failed' }) });
          if (!outcome.ok) span.fail(outcome.errorMessage ?? outcome.errorClass ?? 'failed');
          span.end();
        }
        // How long the endpoint took, unless the attempt never reached it or our own lag made it slow.
        if (!outcome.serviceFault && outcome.errorClass !== 'blocked_destination') pace.record(item.endpoint, outcome.durationMs);
      }
    } finally {
      sending -= 1;
      sentAt.delete(item);
      const n = (sendingByHost.get(item.host) ?? 1) - 1;
      if (n > 0) sendingByHost.set(item.host, n);
      else sendingByHost.delete(item.host);
      const o = (sendingByOwner.get(ctx.owner) ?? 1) - 1;
      if (o > 0) sendingByOwner.set(ctx.owner, o);
      else sendingByOwner.delete(ctx.owner);
      startQueued(); // a slot is free: the next claimed-ahead delivery goes out at once
    }
    if (closed) return;
    const delivery = { id: item.id, launch_id: item.launchId, event_id: item.eventId, attempt_count: item.attempt, lease_token: item.token };
    const result = await settle({ delivery, owner: id, launchOwner: ctx.owner, outcome, startedAt, now: clock.now(), schedule: options.retrySchedule, endpointId: ctx.endpointId }, ctx.ordered);
    if (deps.afterAttempt && result !== 'lease_lost') {
      await deps.afterAttempt(ctx, outcome, clock.now()).catch((error: unknown) => log.warn({ err: error, deliveryId: item.id }, 'endpoint health update failed'));
    }
    const fields = { deliveryId: item.id, launchId: item.launchId, eventId: item.eventId, host: item.host, attempt: item.attempt, event: ctx.event, trial: item.trial };
    if (outcome.ok) log.info({ ...fields, statusCode: outcome.statusCode, durationMs: outcome.durationMs, result }, 'webhook delivered');
    else log.warn({ ...fields, statusCode: outcome.statusCode, durationMs: outcome.durationMs, errorClass: outcome.errorClass, result, error: outcome.errorMessage, detail: outcome.logDetail }, 'webhook attempt failed');
  }

  /** Each event's traceparent, read once (a launch's events go to a few URLs each). */
  const traceParents = new Map<string, string | null>();

  /** A span for an attempt (tracing on), a child of the span that recorded its event. */
  async function attemptSpan(item: Item): Promise<SpanHandle | undefined> {
    const { ctx } = item;
    let parent = ctx.traceParent ?? traceParents.get(ctx.eventId);
    if (parent === undefined) {
      parent = await eventTraceParent(db, ctx.eventId).catch(() => null);
      if (traceParents.size >= 1000) traceParents.clear();
      traceParents.set(ctx.eventId, parent);
    }
    return openSpan(`webhook.attempt ${ctx.event}`, {
      kind: 'client',
      parent,
      attributes: {
        'http.request.method': 'POST',
        'server.address': item.host,
        'webhook.delivery_id': item.id,
        'webhook.event_id': ctx.eventId,
        'webhook.event': ctx.event,
        'webhook.attempt': item.attempt,
        'webhook.endpoint_id': ctx.endpointId ?? '',
        'launch.id': item.launchId,
      },
    });
  }

  /** The lease covers a whole attempt again: half of it is left, or it was renewed under this claim's token (test/webhooks/stalledPastLease.test.ts). */
  async function resendable(item: Item): Promise<boolean> {
    const now = clock.now();
    if (item.leaseExpiresAt - now >= options.leaseMs / 2) return true;
    try {
      if (!(await renewClaim(db, { id: item.id, owner: id, token: item.token }, now, options.leaseMs))) return false;
    } catch (error) {
      log.warn({ err: error, deliveryId: item.id }, 'could not renew a webhook lease to send again; the attempt fails as ours');
      return false;
    }
    item.leaseExpiresAt = now + options.leaseMs;
    return true;
  }

  async function runOnce(): Promise<number> {
    const claimed = await turn(true, true);
    await Promise.all(claimed.map((item) => item.done));
    return claimed.length;
  }

  /** Resolves true once every held delivery is done, false when `ms` passed first. */
  async function settledWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const all = (async () => {
      while (held.size > 0) await Promise.all([...held.values()].map((item) => item.done));
      return true;
    })();
    try {
      return await Promise.race([all, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    id,
    notify(handoff?: DeliveryHandoff) {
      if (handoff?.complete && !everyTurnClaims && offered.length + handoff.offers.length <= MAX_OFFERED) {
        offered.push(...handoff.offers);
      } else {
        notified += 1;
        claimable = true;
      }
      poll.wake();
    },
    runOnce,
    async drain() {
      for (let round = 0; round < 100_000; round++) {
        const n = await runOnce();
        if (n === 0 && held.size === 0) return;
        if (n === 0) await Promise.race([...held.values()].map((item) => item.done));
      }
      throw new Error('drain did not finish');
    },
    start() {
      stopping = false;
      closed = false;
      poll.start();
    },
    async stop() {
      stopping = true;
      if (slotTimer) clearTimeout(slotTimer);
      slotTimer = undefined;
      slotAt = Infinity;
      await poll.stop();
      await chain;
      // What was claimed ahead and never sent goes back at once, under its tokens.
      const unsent = queue.splice(0);
      if (unsent.length > 0) {
        await releaseClaims(
          db,
          unsent.map((item) => ({ id: item.id, owner: id, token: item.token })),
          clock.now(),
        ).catch((error: unknown) => log.warn({ err: error, count: unsent.length }, 'could not give claimed webhook deliveries back; their leases will expire'));
        for (const item of unsent) {
          if (item.trial) breakers.cancelTrial(item.endpoint);
          item.finish();
        }
      }
      const clean = await settledWithin(stopGraceMs);
      if (!clean) {
        closed = true;
        log.warn({ inFlight: held.size }, 'webhook attempts still in flight at shutdown; their leases expire and they are attempted again');
      }
      return clean;
    },
    inFlight() {
      return sending;
    },
    queued() {
      return queue.length;
    },
  };
}
