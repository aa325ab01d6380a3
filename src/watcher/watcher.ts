import type { AccountBalanceChange, ChainHistory, HistoryTransaction, SignatureEntry } from '../chain/history.js';
import type { Db, DbOrTx } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { UnavailableError } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { TransientError } from '../lib/retry.js';
import type { Logger } from '../lib/logger.js';
import type { OutboxSignal } from '../webhooks/outbox.js';
import { createPollLoop, type PollLoop } from '../lib/pollLoop.js';
import { claimDueWatches, commitProgress, releaseWatch, renewWatchLease, wakeWatches, watchContext, WatchFencedError, type FoundEvent, type WatchRow } from './store.js';

/** The watch as a handler sees it. */
export interface WatchView {
  id: string;
  launchId: string;
  kind: string;
  address: string;
  context: Record<string, unknown>;
  cliffAt: number | null;
}

/** What a handler makes of a batch of successful transactions (oldest first). */
export interface HandlerOutcome {
  events: FoundEvent[];
  /** The watch is over (e.g. vesting complete, escrow closed). */
  end?: string | undefined;
  context?: Record<string, unknown> | undefined;
  /** Writes to commit with the batch, in its transaction, returning more events (the funding watch's low-balance check). */
  apply?: ((trx: DbOrTx, now: number) => Promise<FoundEvent[]>) | undefined;
}

/**
 * One kind of watch: decodes the watched address's transactions into events (pure decoders plus
 * the account reads that complete them), and answers its scheduled check (the vesting cliff).
 */
export interface WatchHandler {
  process(watch: WatchView, transactions: HistoryTransaction[], chain: ChainHistory): Promise<HandlerOutcome>;
  /**
   * A kind that reads nothing of a transaction but the watched address's lamports (the funding
   * wallet) says so here: where the chain answers `balancesAt` (the embedded chain), the watcher
   * reads a batch's balances in one read and calls this instead of {@link process} (same outcome).
   */
  processBalances?(watch: WatchView, changes: AccountBalanceChange[]): Promise<HandlerOutcome>;
  /** The longest this kind's idle watch waits between checks, when shorter than the watcher's (a curve: its graduation is due within 60 s of the last buy). */
  maxIntervalMs?: number;
  /** A scheduled check at `cliffAt`; `confirmed: false` re-checks later (the chain's clock lags). */
  scheduled?(watch: WatchView, chain: ChainHistory, now: number): Promise<HandlerOutcome & { confirmed: boolean }>;
}

export interface ChainWatcherOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  chain: ChainHistory;
  handlers: Record<string, WatchHandler>;
  signal: OutboxSignal;
  /** Interval after activity (and the first check). */
  pollIntervalMs?: number;
  /** The longest an idle watch waits between checks. */
  maxIntervalMs?: number;
  leaseMs?: number;
  /** Watches claimed per turn. */
  claimLimit?: number;
  /** Signatures per history page (1..1000, `getSignaturesForAddress`'s `limit`); a pass holds at most two pages (the newest and the current one). */
  pageLimit?: number;
  /** Page edges a walk down a backlog keeps (past it, climbing back walks down again from the newest page's edge); a test knob. */
  maxPageMarks?: number;
  /** Transactions committed together. */
  batchSize?: number;
  /** Test hook: runs after a batch was read and decoded, before its commit. */
  beforeCommit?: (watch: WatchRow, batch: SignatureEntry[]) => Promise<void> | void;
}

/** Wake-up addresses kept between turns (a burst of launches touches many unwatched ones). */
const MAX_TOUCHED = 20_000;

const DEFAULTS = { pollIntervalMs: 2000, maxIntervalMs: 10 * 60_000, leaseMs: 60_000, claimLimit: 16, pageLimit: 1000, maxPageMarks: 1000, batchSize: 50 };

/**
 * The chain watcher (docs/watcher.md). Claims due watches with a lease and a fencing token, reads each
 * watched address's new history oldest first from its cursor, decodes it, and commits the events
 * with the new cursor in one transaction through the outbox. Failed transactions emit nothing;
 * a restart resumes at the cursor (backfill); dedupe is on (signature, instruction index, event).
 * Poll intervals adapt per watch: back to `pollIntervalMs` after activity, doubling while idle up
 * to `maxIntervalMs`; a vesting cliff is a scheduled check at its time.
 */
export class ChainWatcher {
  readonly id = newId('watcher', 6);
  private readonly options: ChainWatcherOptions & typeof DEFAULTS;
  private readonly loop: PollLoop;
  /** Chain reads made (history pages, transactions, accounts through handlers are not counted). */
  reads = 0;
  /** The most history entries one pass held at once (two pages at most: the newest, kept for last, and the current one). */
  heldPeak = 0;
  /** Transactions this watcher set aside as undecodable (each one a `watch` dead letter). */
  undecodable = 0;
  /** Addresses the chain reported activity on since the last turn (wake-ups, see ChainHistory.onActivity). */
  private touched = new Set<string>();
  private readonly unsubscribe: () => void;

  constructor(options: ChainWatcherOptions) {
    this.options = { ...DEFAULTS, ...stripUndefined(options) } as ChainWatcherOptions & typeof DEFAULTS;
    // The same poll loop as the runner and the dispatcher; a turn checks every due watch. Sleeping
    // one poll interval between turns is cheap: a turn with nothing due is one indexed query.
    this.loop = createPollLoop({
      logger: this.options.logger,
      what: 'checking watches',
      intervalMs: this.options.pollIntervalMs,
      turn: async () => {
        await this.runOnce();
        return false;
      },
    });
    // A wake-up source makes an idle watch report within one poll interval of its activity, however
    // long its own interval has grown: the cost of watching follows activity, not the number of watches.
    this.unsubscribe =
      this.options.chain.onActivity?.((addresses) => {
        // Beyond the cap a hint is dropped: that watch reports at its own next check instead.
        if (this.touched.size < MAX_TOUCHED) for (const a of addresses) this.touched.add(a);
      }) ?? (() => undefined);
  }

  start(): void {
    this.loop.start();
  }

  /** Checks due watches now (a launch completed and got watches). */
  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    this.unsubscribe();
    await this.loop.stop();
  }

  /** Claims and processes every due watch once; resolves with the number of events recorded. */
  async runOnce(): Promise<number> {
    const { db, clock, leaseMs, claimLimit } = this.options;
    let recorded = 0;
    await this.applyWakeUps();
    for (;;) {
      // Watches claimed together are processed one after another: each one's lease runs from this claim.
      const claimedAt = clock.now();
      const claimed = await claimDueWatches(db, { owner: this.id, now: claimedAt, leaseMs, limit: claimLimit });
      if (claimed.length === 0) return recorded;
      for (const watch of claimed) recorded += await this.processSafely(watch, claimedAt);
      if (claimed.length < claimLimit) return recorded;
    }
  }

  private async applyWakeUps(): Promise<void> {
    const { db, clock } = this.options;
    if (this.touched.size === 0) return;
    const addresses = [...this.touched];
    this.touched.clear();
    await wakeWatches(db, addresses, clock.now());
  }

  private async processSafely(watch: WatchRow, claimedAt: number): Promise<number> {
    const logger = this.options.logger.child({ watchId: watch.id, launchId: watch.launch_id, kind: watch.kind });
    // What was committed before a failure part way through a backlog stays committed (and is announced).
    const tally = { recorded: 0 };
    try {
      await this.process(watch, claimedAt, tally);
    } catch (error) {
      if (error instanceof WatchFencedError) {
        logger.warn('watch lease lost to another watcher; leaving it');
      } else {
        logger.warn({ err: error }, 'watch check failed; retrying later');
        await releaseWatch(this.options.db, watch, this.options.clock.now() + this.options.pollIntervalMs * 5).catch(() => undefined);
      }
    }
    if (tally.recorded > 0) this.options.signal.notify();
    return tally.recorded;
  }

  private view(watch: WatchRow, context = watchContext(watch)): WatchView {
    return { id: watch.id, launchId: watch.launch_id, kind: watch.kind, address: watch.address, context, cliffAt: watch.cliff_at === null ? null : Number(watch.cliff_at) };
  }

  private schedule(watch: WatchRow, activity: boolean, now: number, cliffAt: number | null): { intervalMs: number; nextCheckAt: number } {
    const { pollIntervalMs } = this.options;
    const maxIntervalMs = Math.min(this.options.maxIntervalMs, this.options.handlers[watch.kind]?.maxIntervalMs ?? Number.MAX_SAFE_INTEGER);
    const intervalMs = activity ? pollIntervalMs : Math.min(maxIntervalMs, Math.max(pollIntervalMs, Number(watch.interval_ms) * 2));
    let nextCheckAt = now + intervalMs;
    if (cliffAt !== null) nextCheckAt = Math.min(nextCheckAt, Math.max(now, cliffAt));
    return { intervalMs, nextCheckAt: Math.min(nextCheckAt, Number(watch.ends_at)) };
  }

  private async process(watch: WatchRow, claimedAt: number, tally: { recorded: number }): Promise<void> {
    const { db, clock, chain, handlers } = this.options;
    const handler = handlers[watch.kind];
    const now = clock.now();
    if (!handler) {
      tally.recorded += await commitProgress(db, clock, watch, { events: [], cursor: watch.cursor, nextCheckAt: now, intervalMs: Number(watch.interval_ms), activity: false, end: 'unknown_kind' });
      return;
    }
    if (now >= Number(watch.ends_at)) {
      tally.recorded += await commitProgress(db, clock, watch, { events: [], cursor: watch.cursor, nextCheckAt: now, intervalMs: Number(watch.interval_ms), activity: false, end: 'ttl' });
      return;
    }
    let context = watchContext(watch);
    let contextChanged = false;
    let cliffAt = watch.cliff_at === null ? null : Number(watch.cliff_at);
    let current = watch;
    let activity = false;

    // The scheduled check (the vesting cliff, confirmed by reading the escrow), at most once a pass.
    // Its outcome is carried by the pass's next commit, its events ahead of that commit's own, so the
    // fence and the event keys make it count once whichever commit carries it (docs/watcher.md).
    const scheduled = handler.scheduled;
    const cliffDue = () => cliffAt !== null && scheduled !== undefined && clock.now() >= cliffAt;
    let checked = false;
    let cliff: { events: FoundEvent[]; confirmed: boolean; end: string | undefined } | undefined;
    const checkCliff = async (check: NonNullable<WatchHandler['scheduled']>) => {
      const outcome = await check(this.view(current, context), chain, clock.now());
      if (outcome.context) {
        context = { ...context, ...outcome.context };
        contextChanged = true;
      }
      // Not confirmed (the escrow says not yet): checked again one poll interval from now.
      cliffAt = outcome.confirmed ? null : clock.now() + this.options.pollIntervalMs;
      activity ||= outcome.events.length > 0;
      return { events: outcome.events, confirmed: outcome.confirmed, end: outcome.end };
    };
    /** The check's outcome for the commit about to be made (once). */
    const carry = () => {
      const carried = cliff;
      cliff = undefined;
      return carried;
    };

    // A cliff that had passed when the pass began is checked before the history: it precedes every
    // claim on chain, and history that ends the watch (everything claimed, the escrow closed while
    // the service was down) cannot skip it.
    if (cliffDue() && scheduled) {
      cliff = await checkCliff(scheduled);
      checked = true;
    }
    if (cliff?.end !== undefined) {
      const carried = carry();
      const { intervalMs, nextCheckAt } = this.schedule(current, activity, clock.now(), cliffAt);
      tally.recorded += await commitProgress(db, clock, current, { events: carried?.events ?? [], cursor: watch.cursor, nextCheckAt, intervalMs, activity: (carried?.events.length ?? 0) > 0, end: carried?.end, clearCliff: true, context: contextChanged ? context : undefined });
      return;
    }

    // Then the history, read a page at a time, oldest page first (docs/architecture.md, The chain
    // watcher): each batch's commit moves the cursor, so a pass that stops part way resumes at the next page.
    // The lease was taken at the claim, maybe long before this watch's turn came: renewals count from there.
    const walk: HistoryWalk = { marks: [], next: undefined, newest: undefined, lastRenewal: claimedAt };
    let cursor = watch.cursor;
    let settled = false;
    // A cliff that passes during the pass is checked after the history, under the same lease: the
    // last history commit keeps it for the check (given back, the watch is due at once and another
    // watcher could claim it before the check commits, fencing this pass's check out).
    let checkAfter = false;
    for (let top = false; !top; ) {
      const page = await this.nextPage(current, cursor, walk);
      top = page.top;
      const entries = page.entries;
      for (let i = 0; i < entries.length; i += this.options.batchSize) {
        const batch = entries.slice(i, i + this.options.batchSize);
        const { outcome, undecodable } = await this.readBatch(handler, current, context, batch);
        if (outcome.context) context = { ...context, ...outcome.context };
        activity ||= outcome.events.length > 0;
        cursor = batch[batch.length - 1]?.signature ?? cursor;
        const last = top && i + this.options.batchSize >= entries.length;
        await this.options.beforeCommit?.(current, batch);
        const ends = outcome.end !== undefined;
        // A cliff that passed during the pass is checked before the commit that ends the watch.
        if (ends && !checked && cliffDue() && scheduled) {
          cliff = await checkCliff(scheduled);
          checked = true;
        }
        if (last && !ends && !checked) checkAfter = cliffDue();
        const carried = carry();
        const { intervalMs, nextCheckAt } = this.schedule(current, activity, clock.now(), cliffAt);
        tally.recorded += await commitProgress(db, clock, current, {
          events: carried ? [...carried.events, ...outcome.events] : outcome.events,
          cursor,
          nextCheckAt,
          intervalMs,
          activity: outcome.events.length > 0 || (carried?.events.length ?? 0) > 0,
          end: outcome.end,
          context: outcome.context || contextChanged ? context : undefined,
          apply: outcome.apply,
          undecodable,
          keepLease: (!last || checkAfter) && !ends,
          leaseMs: this.options.leaseMs,
          ...(ends || carried?.confirmed ? { clearCliff: true } : {}),
        });
        contextChanged = false;
        walk.lastRenewal = clock.now();
        if (ends) return;
        settled = last;
        current = { ...current, cursor, interval_ms: intervalMs };
      }
    }

    // No new history (or none in the last page): the pass ends here. Or the cliff passed during it:
    // checked now, committed under the lease of the pass (the last history commit kept it).
    if (!settled && !checked) checkAfter = cliffDue();
    if (checkAfter && scheduled) cliff = await checkCliff(scheduled);
    const carried = carry();
    if (settled && !carried) return; // the last history commit gave the lease back
    const { intervalMs, nextCheckAt } = this.schedule(current, activity, clock.now(), cliffAt);
    tally.recorded += await commitProgress(db, clock, current, {
      events: carried?.events ?? [],
      cursor,
      nextCheckAt,
      intervalMs,
      activity: (carried?.events.length ?? 0) > 0,
      end: carried?.end,
      context: contextChanged ? context : undefined,
      ...(carried?.confirmed ? { clearCliff: true } : {}),
    });
  }

  /**
   * A batch's successful transactions through its handler: each read whole (`getTransaction`), or,
   * for a kind that reads only the address's lamports, all their balances in one `balancesAt`
   * where the chain answers it. A failed transaction changed nothing: it emits nothing.
   */
  private async readBatch(handler: WatchHandler, watch: WatchRow, context: Record<string, unknown>, batch: SignatureEntry[]): Promise<{ outcome: HandlerOutcome; undecodable: Array<{ signature: string; message: string }> }> {
    const { chain } = this.options;
    const wanted = batch.filter((entry) => entry.err === null).map((entry) => entry.signature);
    this.reads += wanted.length;
    if (wanted.length === 0) return { outcome: { events: [] }, undecodable: [] };
    if (handler.processBalances && chain.balancesAt) {
      const found = await chain.balancesAt(watch.address, wanted);
      const changes: AccountBalanceChange[] = [];
      found.forEach((change, i) => {
        if (!change) throw new Error(`transaction ${wanted[i]} is in the history but cannot be read`);
        if (change.err === null) changes.push(change);
      });
      return { outcome: changes.length > 0 ? await handler.processBalances(this.view(watch, context), changes) : { events: [] }, undecodable: [] };
    }
    const transactions: HistoryTransaction[] = [];
    for (const signature of wanted) {
      const tx = await chain.getTransaction(signature);
      if (!tx) throw new Error(`transaction ${signature} is in the history but cannot be read`);
      if (tx.err === null) transactions.push(tx);
    }
    return transactions.length > 0 ? this.decode(handler, watch, context, transactions) : { outcome: { events: [] }, undecodable: [] };
  }

  /**
   * A batch through its handler. When the handler throws for a reason that is not transient (a
   * decoder that cannot read a transaction: a program upgrade, a malformed instruction), the batch
   * is decoded again one transaction at a time: the others are reported as usual and each one that
   * still throws is set aside, to be recorded once as a `watch` dead letter and skipped (the cursor
   * moves past it), instead of failing the whole pass again every few polls forever. A transient
   * failure (the chain could not be read) fails the pass, which is retried later.
   */
  private async decode(handler: WatchHandler, watch: WatchRow, context: Record<string, unknown>, transactions: HistoryTransaction[]): Promise<{ outcome: HandlerOutcome; undecodable: Array<{ signature: string; message: string }> }> {
    const chain = this.options.chain;
    try {
      return { outcome: await handler.process(this.view(watch, context), transactions, chain), undecodable: [] };
    } catch (error) {
      if (isTransient(error)) throw error;
    }
    const events: FoundEvent[] = [];
    const applies: Array<NonNullable<HandlerOutcome['apply']>> = [];
    const undecodable: Array<{ signature: string; message: string }> = [];
    let merged = context;
    let changed: Record<string, unknown> | undefined;
    let end: string | undefined;
    for (const tx of transactions) {
      let one: HandlerOutcome;
      try {
        one = await handler.process(this.view(watch, merged), [tx], chain);
      } catch (error) {
        if (isTransient(error)) throw error;
        undecodable.push({ signature: tx.signature, message: error instanceof Error ? error.message : String(error) });
        this.undecodable += 1;
        this.options.logger.warn({ watchId: watch.id, launchId: watch.launch_id, kind: watch.kind, signature: tx.signature, err: error }, 'a transaction no decoder could read is recorded as a dead letter and skipped');
        continue;
      }
      events.push(...one.events);
      if (one.apply) applies.push(one.apply);
      if (one.context) {
        merged = { ...merged, ...one.context };
        changed = { ...changed, ...one.context };
      }
      if (one.end !== undefined) {
        end = one.end;
        break;
      }
    }
    const apply =
      applies.length === 0
        ? undefined
        : async (trx: DbOrTx, now: number) => {
            const more: FoundEvent[] = [];
            for (const a of applies) more.push(...(await a(trx, now)));
            return more;
          };
    return { outcome: { events, end, context: changed, apply }, undecodable };
  }

  /**
   * The next page of the address's history after `cursor`, oldest first, and whether it is the top
   * (the newest page: the pass ends with it). `getSignaturesForAddress` answers newest first, at
   * most `pageLimit` entries strictly between `until` and `before`, so the oldest page is found by
   * walking down from the newest in pages (`before` = the oldest entry of the page above, `until` =
   * the cursor) until a page holds the whole rest of the range. The first page read from the newest
   * is kept (`walk.newest`) and reported last; of the pages below it only each one's lowest signature
   * is kept on the way down (`walk.marks`). After a page is committed, the range up to the next mark
   * is exactly the page that was read above it (history below a known signature never changes), so
   * climbing back costs one read per page. The newest is read once per pass: the pass reports the
   * backlog it saw at its start, and what lands meanwhile is the next pass's. Progress is the cursor
   * alone, committed per batch: a pass that dies part way (a crash, a lost lease) leaves the cursor
   * at its last committed batch, and the next pass walks down to it again (docs/architecture.md,
   * The chain watcher).
   */
  private async nextPage(watch: WatchRow, cursor: string | null, walk: HistoryWalk): Promise<{ entries: SignatureEntry[]; top: boolean }> {
    const { chain, pageLimit, maxPageMarks, clock, leaseMs, db } = this.options;
    for (;;) {
      const newestEdge = walk.newest?.at(-1)?.signature;
      if (walk.newest && walk.marks.length === 0 && walk.next === newestEdge) {
        // Everything below the newest page is committed: that page ends the pass, without reading the newest again.
        const entries = walk.newest.reverse();
        walk.newest = undefined;
        return { entries, top: true };
      }
      const before = walk.marks.at(-1) ?? newestEdge;
      if (clock.now() - walk.lastRenewal >= leaseMs / 3) {
        // A walk down a long backlog commits nothing until it reaches the oldest page: renew the lease on the way.
        await renewWatchLease(db, watch, clock.now(), leaseMs);
        walk.lastRenewal = clock.now();
      }
      this.reads += 1;
      const page = await chain.signaturesForAddress(watch.address, { until: cursor ?? undefined, before, limit: pageLimit });
      this.heldPeak = Math.max(this.heldPeak, page.length + (walk.newest?.length ?? 0));
      const lowest = page.at(-1)?.signature;
      if (before === undefined) {
        // The newest page: a short one is the whole rest of the history; a full one is kept for last.
        if (page.length < pageLimit) return { entries: page.reverse(), top: true };
        walk.newest = page;
        walk.next = undefined;
        continue;
      }
      if (page.length >= pageLimit && lowest !== walk.next) {
        // More history below this page than fits in it: remember its lower edge and go down. Past
        // `maxPageMarks` the highest mark is forgotten; climbing back there walks down again from the newest page's edge.
        if (walk.marks.length >= maxPageMarks) walk.marks.shift();
        walk.marks.push(lowest as string);
        walk.next = undefined;
        continue;
      }
      // This page is everything up to `before`; once it is committed, the next range starts at `before`.
      walk.next = walk.marks.pop() ?? newestEdge;
      return { entries: page.reverse(), top: false };
    }
  }
}

/** A pass's walk through a backlog: the newest page, kept for last, and the lower edges of the pages between it and the current one (oldest last). */
interface HistoryWalk {
  marks: string[];
  /** The signature just above the cursor once the page below it is committed (the next range's oldest), if known. */
  next: string | undefined;
  /** The first page read from the newest when it was full (newest first): the pass's last page, reported once everything below it is. */
  newest: SignatureEntry[] | undefined;
  /** When the lease was last renewed (the claim, a commit, or a renewal during the walk). */
  lastRenewal: number;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** A failure to read the chain (retried later), as opposed to a transaction a decoder cannot read. */
function isTransient(error: unknown): boolean {
  return error instanceof TransientError || error instanceof UnavailableError;
}
