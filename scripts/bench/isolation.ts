import { performance } from 'node:perf_hooks';
import { systemClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createWebhookEngine } from '../../src/webhooks/engine.js';
import { benchConfig } from './config.js';
import { createBenchDb, insertBenchLaunch, prefillOutbox } from './fixtures.js';
import { startBenchReceiver } from './receiver.js';
import { result, type BenchResult } from './types.js';

/**
 * Deliveries/s to a healthy host over `windowMs`, optionally while a second host never answers
 * (every attempt times out after WEBHOOK_TIMEOUT_MS). Its breaker threshold is set out of reach
 * so the dead host keeps costing attempts: the per-host cap alone has to protect the healthy one.
 */
async function healthyRate(opts: { healthy: number; dead: number; windowMs: number }): Promise<{ perSecond: number; deadAttempts: number }> {
  const bdb = await createBenchDb();
  const good = await startBenchReceiver();
  const dead = await startBenchReceiver({ hang: true });
  try {
    const config = benchConfig(bdb.dir, bdb.secretKey, { WEBHOOK_TIMEOUT_MS: '500ms', BREAKER_FAILURE_THRESHOLD: '1000', WEBHOOK_RETRY_SCHEDULE: '0,1s,1s,1s,1s' });
    if (opts.dead > 0) {
      // The dead host's backlog is older, so it is due first.
      const deadLaunch = await insertBenchLaunch(bdb.db, bdb.box, dead.url);
      await prefillOutbox(bdb.db, deadLaunch, dead.url, opts.dead, Date.now() - 60_000);
    }
    const goodLaunch = await insertBenchLaunch(bdb.db, bdb.box, good.url);
    await prefillOutbox(bdb.db, goodLaunch, good.url, opts.healthy);
    const engine = createWebhookEngine({ db: bdb.db, clock: systemClock, logger: silentLogger(), config, secretBox: bdb.box });
    engine.start();
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([good.waitFor(opts.healthy), new Promise((resolve) => (timer = setTimeout(resolve, opts.windowMs)))]);
    clearTimeout(timer);
    const delivered = good.count;
    const seconds = (performance.now() - started) / 1000;
    await engine.stop();
    return { perSecond: delivered / seconds, deadAttempts: dead.count };
  } finally {
    await good.close();
    await dead.close();
    await bdb.close();
  }
}

/** `isolation`: healthy-host deliveries/s with a dead host beside it ÷ the same without it (alternated three times, best of each). */
export async function benchIsolation(windowMs = 5000): Promise<{ result: BenchResult; note: string }> {
  const healthy = 3000;
  let without = 0;
  let withDead = 0;
  let deadAttempts = 0;
  for (let round = 0; round < 3; round++) {
    without = Math.max(without, (await healthyRate({ healthy, dead: 0, windowMs })).perSecond);
    const got = await healthyRate({ healthy, dead: 2000, windowMs });
    if (got.perSecond > withDead) ({ perSecond: withDead, deadAttempts } = got);
  }
  return {
    result: result('isolation', withDead, 'deliveries/s', without),
    note: `healthy backlog ${healthy}, ${windowMs / 1000} s windows; dead host: 2000 pending, never answers, 500 ms timeout, breaker out of reach, ${deadAttempts} attempts timed out in the window`,
  };
}
