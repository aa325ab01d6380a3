import type { Clock } from '../lib/clock.js';
import type { HealthReport } from './healthService.js';

/**
 * Shares one health report between requests: concurrent requests wait for the same run of the
 * checks, and a report younger than `maxAgeMs` is served again. Monitors polling every 30 s always
 * get a fresh run; a burst of probes (a load balancer, a dashboard, an attacker) costs the
 * database and the chain one run per `maxAgeMs` instead of one per request.
 */
export function cachedHealth(run: () => Promise<HealthReport>, clock: Clock, maxAgeMs: number): () => Promise<HealthReport> {
  let last: { report: HealthReport; at: number } | undefined;
  let inFlight: Promise<HealthReport> | undefined;
  return () => {
    if (last && clock.now() - last.at < maxAgeMs) return Promise.resolve(last.report);
    inFlight ??= run()
      .then((report) => {
        last = { report, at: clock.now() };
        return report;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
}
