import { describe, expect, it } from 'vitest';
import { shareSlots, type Lane } from '../../src/webhooks/sql/shareSlots.js';

const lane = (owner: string, endpoint: string, dueAt = 0, host = endpoint): Lane => ({ owner, endpoint, host, dueAt });
const byOwner = (given: Map<Lane, number>) => {
  const out: Record<string, number> = {};
  for (const [l, n] of given) out[l.owner] = (out[l.owner] ?? 0) + n;
  return out;
};

describe('sharing free delivery slots', () => {
  const free = (n: number) => () => n;

  it('gives the next slots to the owner holding the fewest, up to an even share, however early the other owner is due', () => {
    const lanes = [...Array.from({ length: 12 }, (_, i) => lane('a', `a${i}`, 0)), lane('b', 'b0', 1_000)];
    const given = shareSlots({ lanes, limit: 4, hostFree: free(8), endpointFree: free(8), ownerHeld: (o) => (o === 'a' ? 10 : 0), perOwnerCap: 100 });
    expect(byOwner(given)).toEqual({ b: 4 });
    const even = shareSlots({ lanes, limit: 10, hostFree: free(8), endpointFree: free(8), ownerHeld: (o) => (o === 'a' ? 2 : 0), perOwnerCap: 100 });
    expect(byOwner(even)).toEqual({ a: 4, b: 6 });
  });

  it('never passes an owner cap, and an owner alone takes every slot its caps allow', () => {
    const lanes = Array.from({ length: 20 }, (_, i) => lane('a', `a${i}`));
    expect(byOwner(shareSlots({ lanes, limit: 64, hostFree: free(8), endpointFree: free(8), ownerHeld: () => 40, perOwnerCap: 48 }))).toEqual({ a: 8 });
    expect(byOwner(shareSlots({ lanes, limit: 64, hostFree: free(8), endpointFree: free(8), ownerHeld: () => 0, perOwnerCap: 1000 }))).toEqual({ a: 64 });
  });

  it('takes turns between an owner’s endpoints, within each endpoint’s and host’s free slots', () => {
    const lanes = [lane('a', 'slow', 0, 'h1'), lane('a', 'fast1', 5, 'h2'), lane('a', 'fast2', 9, 'h2')];
    const given = shareSlots({ lanes, limit: 10, hostFree: (h) => (h === 'h1' ? 8 : 3), endpointFree: (e) => (e === 'slow' ? 1 : 8), ownerHeld: () => 0, perOwnerCap: 100 });
    expect(Object.fromEntries([...given].map(([l, n]) => [l.endpoint, n]))).toEqual({ slow: 1, fast1: 2, fast2: 1 });
  });
});
