import { describe, expect, it } from 'vitest';
import { percentile } from '../../src/lib/percentile.js';

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);

  it('takes the value at rank ceil(p/100 * n)', () => {
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([10, 20, 30], 50)).toBe(20);
    expect(percentile([10, 20, 30], 99)).toBe(30);
  });

  it('is the only value for one sample, the smallest for p 0, and null for none', () => {
    expect(percentile([7], 99)).toBe(7);
    expect(percentile(hundred, 0)).toBe(1);
    expect(percentile([], 50)).toBeNull();
  });
});
