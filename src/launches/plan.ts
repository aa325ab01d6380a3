import type { LaunchPlan } from '../chain/steps/types.js';

/** Rebuilds the chain plan from a launch's stored (validated) request. */
export function planFromRequest(launchId: string, request: Record<string, unknown>): LaunchPlan {
  const r = request as unknown as Omit<LaunchPlan, 'launchId' | 'totalSupply' | 'operatorFee'> & { totalSupply: string };
  const fee = request.operatorFee as { lamports: string; recipient: string } | undefined;
  return {
    launchId,
    name: r.name,
    ticker: r.ticker,
    uri: r.uri ?? '',
    decimals: r.decimals,
    totalSupply: BigInt(r.totalSupply),
    tokenStandard: r.tokenStandard,
    creator: r.creator,
    allocations: r.allocations,
    revokeMintAuthority: r.revokeMintAuthority ?? false,
    ...(r.vesting ? { vesting: r.vesting } : {}),
    ...(r.dao ? { dao: r.dao } : {}),
    ...(r.pool ? { pool: r.pool } : {}),
    ...(r.fees ? { fees: r.fees } : {}),
    ...(fee ? { operatorFee: { lamports: Number(fee.lamports), recipient: fee.recipient } } : {}),
  };
}
