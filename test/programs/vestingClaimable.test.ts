import { describe, expect, it } from 'vitest';
import { claimableAt, deriveVestingSchedule } from '../../src/chain/programs/jupiterLock/schedule.js';

describe('what a vesting claim would move, by Jupiter Lock\'s schedule', () => {
  // 15 % of 1 000 000 tokens of 6 decimals, a 60 s cliff, two 60 s periods, no cliffUnlockPercent.
  const start = 1_800_000_000n;
  const schedule = { ...deriveVestingSchedule(150_000_000_000n, start, { cliffSeconds: 60, periodSeconds: 60, periods: 2 }), totalClaimedAmount: 0n };

  it('unlocks nothing at the cliff (periods count from it), half a period later, the rest after the second', () => {
    expect(claimableAt(schedule, start + 30n)).toEqual({ claimable: 0n, next: { at: start + 120n, amount: 75_000_000_000n } });
    expect(claimableAt(schedule, start + 60n)).toEqual({ claimable: 0n, next: { at: start + 120n, amount: 75_000_000_000n } });
    expect(claimableAt(schedule, start + 120n)).toEqual({ claimable: 75_000_000_000n, next: { at: start + 180n, amount: 75_000_000_000n } });
    expect(claimableAt({ ...schedule, totalClaimedAmount: 75_000_000_000n }, start + 179n).claimable).toBe(0n);
    expect(claimableAt(schedule, start + 500n)).toEqual({ claimable: 150_000_000_000n, next: undefined });
  });

  it('a remainder the periods do not divide unlocks at the cliff', () => {
    const odd = { ...deriveVestingSchedule(7n, start, { cliffSeconds: 60, periodSeconds: 60, periods: 2 }), totalClaimedAmount: 0n };
    expect(claimableAt(odd, start)).toEqual({ claimable: 0n, next: { at: start + 60n, amount: 1n } });
    expect(claimableAt(odd, start + 60n)).toEqual({ claimable: 1n, next: { at: start + 120n, amount: 3n } });
  });
});
