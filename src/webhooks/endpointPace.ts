/**
 * Each endpoint's in-flight cap, lowered while it answers slowly (docs/architecture.md, "Limits and
 * fairness"). The cap follows the endpoint's recent answer time (an exponential moving average of
 * its attempts' durations, weight 0.3 for the newest): at or under {@link PACE_MS} the full cap;
 * above it the cap shrinks in proportion, `floor(cap × PACE_MS / average)`, at least 1. So an
 * endpoint holds about as many slot-seconds per second as a fast one at the full cap: one that takes
 * 9 s to answer keeps one slot, not eight, and fills no more while it stays slow; answers getting
 * faster raise the cap again. Known per process, from the attempts this dispatcher made; the cap it
 * sets counts every dispatcher's live leases of the endpoint.
 */
export interface EndpointPace {
  /** Records an attempt's duration (ms) against its endpoint. */
  record(endpoint: string, durationMs: number): void;
  /** The endpoints whose cap is below the full one, with that cap. */
  lowered(): ReadonlyMap<string, number>;
  /** The endpoint's cap now. */
  capOf(endpoint: string): number;
}

/** Answer time up to which an endpoint keeps the full cap. */
export const PACE_MS = 1_000;
const WEIGHT = 0.3;
/** Endpoints remembered at most (the least recently recorded is forgotten first). */
const MAX_TRACKED = 10_000;

export function createEndpointPace(fullCap: number): EndpointPace {
  const average = new Map<string, number>();
  const low = new Map<string, number>();
  const capFor = (ms: number) => (ms <= PACE_MS ? fullCap : Math.max(1, Math.min(fullCap, Math.floor((fullCap * PACE_MS) / ms))));
  return {
    record(endpoint, durationMs) {
      const before = average.get(endpoint);
      const next = before === undefined ? durationMs : before + WEIGHT * (durationMs - before);
      average.delete(endpoint); // re-inserted last: the map's order is recency
      average.set(endpoint, next);
      if (average.size > MAX_TRACKED) {
        const oldest = average.keys().next().value as string;
        average.delete(oldest);
        low.delete(oldest);
      }
      const cap = capFor(next);
      if (cap < fullCap) low.set(endpoint, cap);
      else low.delete(endpoint);
    },
    lowered: () => low,
    capOf: (endpoint) => low.get(endpoint) ?? fullCap,
  };
}
