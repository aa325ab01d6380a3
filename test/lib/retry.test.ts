import { describe, expect, it } from 'vitest';
import { jitteredBackoffMs } from '../../src/lib/retry.js';

describe('jitteredBackoffMs', () => {
  it('doubles per attempt between half and all of the ceiling, and stops at the cap', () => {
    expect(jitteredBackoffMs(1, { random: () => 0 })).toBe(250);
    expect(jitteredBackoffMs(1, { random: () => 0.999999 })).toBe(500);
    expect(jitteredBackoffMs(3, { random: () => 0.5 })).toBe(1500);
    expect(jitteredBackoffMs(30, { random: () => 0 })).toBe(15_000);
    expect(jitteredBackoffMs(30, { random: () => 0.999999 })).toBe(30_000);
  });

  it('never waits less than a Retry-After, up to its own cap', () => {
    expect(jitteredBackoffMs(1, { random: () => 0, retryAfterMs: 7_000 })).toBe(7_000);
    expect(jitteredBackoffMs(10, { random: () => 0.999999, retryAfterMs: 1_000 })).toBe(30_000);
    expect(jitteredBackoffMs(1, { random: () => 0, retryAfterMs: 86_400_000 })).toBe(600_000);
  });

  it('spreads many waiters over the window', () => {
    const delays = new Set(Array.from({ length: 50 }, () => jitteredBackoffMs(5)));
    expect(delays.size).toBeGreaterThan(10);
    for (const d of delays) expect(d >= 4000 && d <= 8000).toBe(true);
  });
});
