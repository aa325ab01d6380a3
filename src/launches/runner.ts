import type { LaunchRow } from '../db/schema.js';
import { newId } from '../lib/ids.js';
import { backoffMs } from '../lib/retry.js';
import { classifyFailure } from './failure.js';
import { claimLaunch, extendLease, LeaseLostError, releaseLaunch } from './runStore.js';
import { runLaunchSteps, type LaunchRunDeps } from './runLaunch.js';

export interface LaunchRunnerOptions extends LaunchRunDeps {
  concurrency?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
  maxStepAttempts?: number;
  /** Backoff between attempts of a step after a transient failure. */
  backoff?: (attempt: number) => number;
}

/**
 * Claims launches with leases and runs their steps in order. A crash leaves the lease to expire;
 * the next runner resumes at the exact step, whose recorded transactions make the resume safe.
 */
export class LaunchRunner {
  readonly id = newId('runner', 6);
  private readonly inFlight = new Set<Promise<void>>();
  private running = false;
  private stopping = false;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: LaunchRunnerOptions) {}

  private get concurrency() {
    return this.options.concurrency ?? 2;
  }
  private get leaseMs() {
    return this.options.leaseMs ?? 60_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Wakes the loop at once (a launch was queued or retried). */
  wake(): void {
    this.wakeUp?.();
  }

  /** Stops claiming, waits for in-flight launches to reach a step boundary and release their leases. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping = true;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Claims and runs launches until none is due; for tests and scripts. */
  async drain(): Promise<number> {
    let count = 0;
    for (;;) {
      const launch = await claimLaunch(this.options.db, { owner: this.id, now: this.options.clock.now(), leaseMs: this.leaseMs });
      if (!launch) return count;
      await this.process(launch);
      count += 1;
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      let claimed = false;
      try {
        while (this.running && this.inFlight.size < this.concurrency) {
          const launch = await claimLaunch(this.options.db, { owner: this.id, now: this.options.clock.now(), leaseMs: this.leaseMs });
          if (!launch) break;
          claimed = true;
          const task = this.process(launch).finally(() => {
            this.inFlight.delete(task);
            this.wake();
          });
          this.inFlight.add(task);
        }
      } catch (error) {
        this.options.logger.error({ err: error }, 'launch claim failed');
      }
      if (!claimed || this.inFlight.size >= this.concurrency) await this.sleep(this.options.pollIntervalMs ?? 1000);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }

  /** Runs one claimed launch with a heartbeat on its lease; never throws. */
  private async process(launch: LaunchRow): Promise<void> {
    const { db, clock } = this.options;
    const logger = this.options.logger.child({ component: 'runner', launchId: launch.id });
    let leaseLost = false;
    const heartbeat = setInterval(() => {
      extendLease(db, { launchId: launch.id, owner: this.id, until: clock.now() + this.leaseMs })
        .then((held) => (leaseLost ||= !held))
        .catch((error: unknown) => logger.warn({ err: error }, 'lease heartbeat failed'));
    }, Math.max(1000, Math.floor(this.leaseMs / 3)));
    heartbeat.unref();
    try {
      const outcome = await runLaunchSteps({
        ...this.options,
        logger,
        launch,
        leaseOwner: this.id,
        shouldContinue: () => !this.stopping && !leaseLost,
        maxStepAttempts: this.options.maxStepAttempts ?? 3,
      });
      if (outcome.kind === 'retry') {
        const delay = (this.options.backoff ?? ((n: number) => backoffMs(n)))(outcome.attempt);
        await releaseLaunch(db, { launchId: launch.id, owner: this.id, runAfter: clock.now() + delay, now: clock.now() });
      } else if (outcome.kind === 'paused') {
        await releaseLaunch(db, { launchId: launch.id, owner: this.id, runAfter: clock.now(), now: clock.now() });
      }
    } catch (error) {
      if (error instanceof LeaseLostError) {
        logger.warn('lease lost to another runner; leaving the launch to it');
        return;
      }
      // A failure outside a step (the database, a bug): release so another pass retries.
      logger.error({ err: error, failure: classifyFailure(error) }, 'launch run failed outside a step');
      await releaseLaunch(db, { launchId: launch.id, owner: this.id, runAfter: clock.now() + 5000, now: clock.now() }).catch(() => undefined);
    } finally {
      clearInterval(heartbeat);
    }
  }
}
