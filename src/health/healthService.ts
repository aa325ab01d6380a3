import type { BreakerSnapshot } from '../lib/breaker.js';
import type { Clock } from '../lib/clock.js';
import { runCheck, type CheckResult, type Probe } from './runCheck.js';

/** Anything that can list circuit breakers by endpoint host (the webhook engine's registry). */
export interface BreakerSource {
  snapshot(): Record<string, BreakerSnapshot>;
}

export interface HealthReport {
  status: 'healthy' | 'degraded' | 'unhealthy';
  timestamp: string;
  version: string;
  checks: { database: CheckResult; chain: CheckResult; cache: CheckResult };
  uptime: number;
  circuitBreakers: Record<string, BreakerSnapshot>;
}

export interface HealthDeps {
  clock: Clock;
  version: string;
  startedAt: number;
  timeoutMs: number;
  probes: { database: Probe; chain: Probe; cache: Probe };
  breakers: BreakerSource;
  /** Each RPC endpoint as the chain probe just found it (RPC backend only). */
  chainEndpoints?: () => NonNullable<CheckResult['endpoints']>;
}

/** Runs the three checks in parallel; database and chain are critical, cache is optional. */
export async function checkHealth(deps: HealthDeps): Promise<HealthReport> {
  const [database, chainCheck, cache] = await Promise.all([
    runCheck(deps.probes.database, deps.timeoutMs),
    runCheck(deps.probes.chain, deps.timeoutMs),
    runCheck(deps.probes.cache, deps.timeoutMs),
  ]);
  // The chain passes while any endpoint answers; each one is listed either way.
  const chain = deps.chainEndpoints ? { ...chainCheck, endpoints: deps.chainEndpoints() } : chainCheck;
  const critical = database.status === 'fail' || chain.status === 'fail';
  let circuitBreakers: Record<string, BreakerSnapshot> = {};
  try {
    circuitBreakers = deps.breakers.snapshot();
  } catch {
    // The breaker list is informational; its failure must not fail the probe.
  }
  const now = deps.clock.now();
  return {
    status: critical ? 'unhealthy' : cache.status === 'fail' ? 'degraded' : 'healthy',
    timestamp: new Date(now).toISOString(),
    version: deps.version,
    checks: { database, chain, cache },
    uptime: Math.max(0, Math.floor((now - deps.startedAt) / 1000)),
    circuitBreakers,
  };
}
