import type { LaunchPlan } from './types.js';

/** Holders of a launch's supply. */
export type AllocationKind = 'creator' | 'vesting' | 'treasury' | 'pool';

/** One allocation in base units; `held` says whose associated token account receives it. */
export interface AllocationShare {
  kind: AllocationKind;
  amount: bigint;
  held: 'creator' | 'payer';
}

/** totalSupply (whole tokens) in base units: totalSupply · 10^decimals. */
export function totalBaseUnits(plan: LaunchPlan): bigint {
  return plan.totalSupply * 10n ** BigInt(plan.decimals);
}

/**
 * Splits the supply by percent, flooring each share; the rounding remainder goes to the creator.
 * Vesting, treasury and pool shares wait in the payer's (launch wallet's) token account until
 * their steps move them. Kinds with a zero share are left out.
 */
export function splitSupply(plan: LaunchPlan): AllocationShare[] {
  const total = totalBaseUnits(plan);
  const share = (percent: number) => (total * BigInt(Math.round(percent * 1_000_000))) / 100_000_000n;
  const others: AllocationShare[] = (['vesting', 'treasury', 'pool'] as const).map((kind) => ({
    kind,
    amount: share(plan.allocations[kind]),
    held: 'payer' as const,
  }));
  const creator = total - others.reduce((sum, a) => sum + a.amount, 0n);
  return [{ kind: 'creator' as const, amount: creator, held: 'creator' as const }, ...others].filter((a) => a.amount > 0n);
}
