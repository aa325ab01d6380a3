import { initialLpAmount } from '../chain/programs/cpmm/initialize.js';
import { solToLamports } from '../chain/steps/support.js';
import { splitSupply } from '../chain/steps/allocations.js';
import { cpmmPoolOf, type LaunchPlan } from '../chain/steps/types.js';
import { cliffShare } from '../chain/programs/jupiterLock/schedule.js';

export interface LimitProblem {
  field: string;
  message: string;
}

/**
 * What the chain would refuse about an otherwise well-formed request, found before anything is
 * sent: a launch that passes here does not mint a token and then fail a later step on a limit.
 * The field limits (name 32 bytes, symbol 10, uri 200, realm name 32, u64 supply) are in the
 * request schema; these are the ones that depend on several fields at once, computed with the
 * same functions the steps use.
 */
export function chainLimitProblems(plan: Omit<LaunchPlan, 'launchId'>): LimitProblem[] {
  const problems: LimitProblem[] = [];
  const shares = new Map(splitSupply({ ...plan, launchId: '' }).map((s) => [s.kind, s.amount]));
  for (const kind of ['vesting', 'treasury', 'pool'] as const) {
    if (plan.allocations[kind] > 0 && !(shares.get(kind)! > 0n)) {
      problems.push({ field: `allocations.${kind}`, message: `is ${plan.allocations[kind]}% of ${plan.totalSupply} whole tokens, which rounds to 0 base units; raise totalSupply or decimals` });
    }
  }
  const vested = shares.get('vesting');
  if (plan.vesting && vested !== undefined && vested > 0n && vested < BigInt(plan.vesting.periods)) {
    problems.push({ field: 'vesting.periods', message: `must not exceed the vested amount in base units (${vested}), so every period unlocks something` });
  } else if (plan.vesting?.cliffUnlockPercent && vested !== undefined && vested > 0n) {
    const afterCliff = vested - cliffShare(vested, plan.vesting.cliffUnlockPercent);
    if (afterCliff < BigInt(plan.vesting.periods)) {
      problems.push({
        field: 'vesting.cliffUnlockPercent',
        message: `leaves ${afterCliff} of the ${vested} vested base units for ${plan.vesting.periods} periods, so a period would unlock nothing; lower cliffUnlockPercent (below 100) or vesting.periods`,
      });
    }
  }
  const pooled = shares.get('pool');
  const cpmm = cpmmPoolOf(plan);
  if (cpmm && pooled !== undefined && pooled > 0n) {
    try {
      initialLpAmount(pooled, solToLamports(cpmm.quoteAmount));
    } catch {
      problems.push({ field: 'pool.quoteAmount', message: 'is too small for this pool: sqrt(pool tokens × quote lamports) must exceed 100 (Raydium CPMM locks 100 LP tokens)' });
    }
  }
  return problems;
}
