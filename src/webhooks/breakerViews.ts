import type { BreakerSnapshot } from '../lib/breaker.js';
import type { BreakerPolicy, BreakerState, BreakerStateName } from './breakerState.js';
import { hostOfEndpoint } from './endpointKey.js';

/* What operators and health see of the breakers: per endpoint, and aggregated by host name. */

/** One endpoint's breaker as operators see it (`GET /api/breakers`). */
export interface BreakerInfo {
  /** The endpoint key (webhooks/endpointKey.ts): scheme, host, port and path. */
  endpoint: string;
  host: string;
  state: BreakerStateName;
  failures: number;
  openedAt: number | null;
  /** When the next half-open trial may go out (null unless open or half-open). */
  nextTrialAt: number | null;
}

/** Every endpoint's state as of now, [endpoint, state] (the registry's `shown()`). */
export type ShownBreakers = ReadonlyArray<readonly [string, BreakerState]>;

function aggregate(states: BreakerState[]): BreakerSnapshot {
  const state = states.some((s) => s.state === 'open') ? 'open' : states.some((s) => s.state === 'half-open') ? 'half-open' : 'closed';
  return { state, failures: Math.max(0, ...states.map((s) => s.failures)) };
}

function byHost(shown: ShownBreakers): Map<string, BreakerState[]> {
  const hosts = new Map<string, BreakerState[]>();
  for (const [endpoint, s] of shown) {
    const host = hostOfEndpoint(endpoint);
    hosts.set(host, [...(hosts.get(host) ?? []), s]);
  }
  return hosts;
}

/** `{host: {state, failures}}`: a host's endpoints aggregated (the worst state, the most failures). */
export function hostSnapshot(shown: ShownBreakers): Record<string, BreakerSnapshot> {
  return Object.fromEntries([...byHost(shown)].map(([host, states]) => [host, aggregate(states)]));
}

/** The aggregate of one host's endpoints (closed with no failures when none is known). */
export function hostState(shown: ShownBreakers, host: string): BreakerSnapshot {
  return aggregate(byHost(shown).get(host) ?? []);
}

/** Every endpoint's breaker, with when its next half-open trial may go out. */
export function breakerList(shown: ShownBreakers, policy: BreakerPolicy): BreakerInfo[] {
  return shown.map(([endpoint, s]) => ({
    endpoint,
    host: hostOfEndpoint(endpoint),
    state: s.state,
    failures: s.failures,
    openedAt: s.openedAt,
    nextTrialAt: s.openedAt === null ? null : s.openedAt + policy.resetTimeoutMs,
  }));
}
