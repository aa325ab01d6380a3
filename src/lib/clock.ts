/** Source of the current time in milliseconds; injected so tests control time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export function manualClock(start = Date.UTC(2026, 0, 1)): Clock & { advance(ms: number): void; set(ms: number): void } {
  let current = start;
  return {
    now: () => current,
    advance(ms: number) {
      current += ms;
    },
    set(ms: number) {
      current = ms;
    },
  };
}

/**
 * The clock leases are taken and compared with: the given clock, except that it never goes
 * backwards (a backward wall-clock step would make every lease look longer, or a claim look older
 * than one it follows). A forward jump can still expire a lease early; fencing tokens make that
 * safe (see docs/architecture.md). On Postgres the lease statements would read the database's own
 * `now()` instead, one clock for every process; the stores take `now` as an argument for that reason.
 */
export function monotonicClock(base: Clock): Clock {
  let last = -Infinity;
  return {
    now() {
      last = Math.max(last, base.now());
      return last;
    },
  };
}
