import { describe, expect, it } from 'vitest';
import { newId, newSortableId } from '../../src/lib/ids.js';

describe('identifiers', () => {
  it('newSortableId: later ids sort after earlier ones, as strings, across every digit of the clock', () => {
    const times = [0, 1, 63, 64, 4095, 4096, 1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000, 2 ** 47, 2 ** 48 - 1];
    const ids = times.map((t) => newSortableId('dlv', t));
    for (const id of ids) expect(id).toMatch(/^dlv_[-0-9A-Z_a-z]{20}$/);
    expect([...ids].sort()).toEqual(ids);
    // Bytewise, as the databases' indexes compare them.
    expect([...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))).toEqual(ids);
  });

  it('newSortableId: ids of one millisecond are distinct and share the clock prefix', () => {
    const ids = Array.from({ length: 20_000 }, () => newSortableId('att', 1_750_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(0, 12))).size).toBe(1);
  });

  it('newSortableId: ids made one after another on the real clock never go backwards', () => {
    let last = '';
    for (let i = 0; i < 5_000; i++) {
      const id = newSortableId('evt');
      expect(id.slice(4, 12) >= last.slice(4, 12)).toBe(true);
      last = id;
    }
  });

  it('newId: random, URL-safe, distinct across the pool refills', () => {
    const ids = Array.from({ length: 2_000 }, () => newId('key', 8));
    for (const id of ids) expect(id).toMatch(/^key_[A-Za-z0-9_-]{11}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
