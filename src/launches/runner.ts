import type { LaunchRow } from '../db/schema.js';
import { monotonicClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { createPollLoop, type PollLoop } from '../lib/pollLoop.js';
import { loopTurn } from '../lib/loopBudget.js';
import { classifyFailure } from './failure.js';
import { claimLaunch, extendLease, leaseOf, LeaseLostError, releaseLaunch, type LaunchLease } from './runStore.js';
import { runLaunchSteps, type LaunchRunDeps } from './runLaunch.js';

export interface LaunchRunnerOptions extends LaunchRunDeps {
  concurrency?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
  /**
   * False while the chain cannot be reached at all (every RPC endpoint's breaker open): the runner
   * claims nothing and holds its launches instead of spending their tries on a fast failure.
   */
  chainAvailable?: () => boolean;
  /** True while the event loop runs late: run one launch at a time, so requests (health first) get their turn. */
  busy?: () => boolean;
  /** After a launch's completion committed (its watches with it): wakes the watchers if it made any. */
  completed?: (launchId: string) => void;
}

/**
 * Claims launches with fenced leases and runs their steps in order. A crash leaves the lease to
 * expire; the next runner resumes at the exact step, whose recorded transactions make the resume
 * safe. A runner never claims a launch it is running itself, and a run whose lease was taken over
 * (it stalled longer than the lease) fails its next write and stops.
 */
export class LaunchRunner {
  readonly id = newId('runner', 6);
  private readonly running = new Set<string>();
  private readonly loop: PollLoop;
  /** Lease times: the injected clock, never going backwards. */
  private readonly leaseClock: Clock;
  private stopping = false;

  constructor(private readonly options: LaunchRunnerOptions) {
    this.leaseClock = monotonicClock(options.clock);
    this.loop = createPollLoop({
      logger: options.logger,
      what: 'claiming launches',
      intervalMs: options.pollIntervalMs ?? 1000,
      turn: () => this.turn(),
    });
  }

  private get concurrency() {
    return this.options.concurrency ?? 2;
  }
  private get leaseMs() {
    return this.options.leaseMs ?? 60_000;
  }

  start(): void {
    this.stopping = false;
    this.loop.start();
  }

  /** Wakes the loop at once (a launch was queued or retried). */
  wake(): void {
    this.loop.wake();
  }

  /**
   * Stops claiming, waits for in-flight launches to reach a step boundary and release their leases.
   * With `timeoutMs`, gives up waiting after it (a step stuck on the chain): that launch's lease
   * expires and the next runner resumes it at the same step. Resolves false when it gave up.
   */
  async stop(options: { timeoutMs?: number } = {}): Promise<boolean> {
    this.stopping = true;
    return this.loop.stop(options);
  }

  /** Claims and runs launches until none is due; for tests and scripts. */
  async drain(): Promise<number> {
    let count = 0;
    for (;;) {
      if (this.options.chainAvailable?.() === false) return count;
      const launch = await this.claim();
      if (!launch) return count;
      await this.process(launch);
      count += 1;
    }
  }

  /** Launches this runner is running now. */
  inFlight(): number {
    return this.running.size;
  }

  private claim(): Promise<LaunchRow | undefined> {
    return claimLaunch(this.options.db, { owner: this.id, now: this.leaseClock.now(), leaseMs: this.leaseMs, running: [...this.running] });
  }

  /** Claims up to the free slots; turns again at once while it finds work and has room. */
  private async turn(): Promise<boolean> {
    while (this.loop.isRunning() && this.running.size < (this.options.busy?.() ? 1 : this.concurrency)) {
      await loopTurn(); // a finished launch must not chain straight into the next one without letting I/O in
      if (this.options.chainAvailable?.() === false) return false;
      const launch = await this.claim();
      if (!launch) return false;
      this.loop.track(this.process(launch));
    }
    return false;
  }

  /** Runs one claimed launch with a heartbeat on its lease; never throws. */
  private async process(launch: LaunchRow): Promise<void> {
    const { db } = this.options;
    const lease = leaseOf(launch);
    const logger = this.options.logger.child({ launchId: launch.id, leaseToken: lease.token });
    this.running.add(launch.id);
    let leaseLost = false;
    const heartbeat = setInterval(() => {
      extendLease(db, lease, { now: this.leaseClock.now(), leaseMs: this.leaseMs })
        .then((held) => (leaseLost ||= !held))
        .catch((error: unknown) => logger.warn({ err: error }, 'lease heartbeat failed'));
    }, Math.max(1000, Math.floor(this.leaseMs / 3)));
    heartbeat.unref();
    try {
      const outcome = await runLaunchSteps({
        ...this.options,
        logger,
        launch,
        lease,
        shouldContinue: () => !this.stopping && !leaseLost,
      });
      // One line per finished launch, for whoever watches the log rather than the webhooks.
      const durationMs = this.options.clock.now() - launch.created_at;
      if (outcome.kind === 'complete') {
        logger.info({ durationMs, mint: outcome.mint }, 'launch complete');
        this.options.completed?.(launch.id);
      }
      if (outcome.kind === 'failed') logger.warn({ durationMs, step: outcome.step, code: outcome.code }, 'launch failed');
      if (outcome.kind === 'retry') {
        await this.release(lease, Math.max(0, outcome.runAfter - this.leaseClock.now()));
      } else if (outcome.kind === 'paused') {
        await this.release(lease, 0);
      }
    } catch (error) {
      if (error instanceof LeaseLostError) {
        logger.warn('lease lost to a newer claim; leaving the launch to it');
        return;
      }
      // A failure outside a step (the database, a bug): release so another pass retries.
      logger.error({ err: error, failure: classifyFailure(error) }, 'launch run failed outside a step');
      await this.release(lease, 5000).catch(() => undefined);
    } finally {
      clearInterval(heartbeat);
      this.running.delete(launch.id);
    }
  }

  private async release(lease: LaunchLease, delayMs: number): Promise<void> {
    const now = this.leaseClock.now();
    await releaseLaunch(this.options.db, lease, { runAfter: now + delayMs, now });
  }
}
