import type { PublicKey } from '@solana/web3.js';
import type { ChainBackend } from '../chain/backend.js';
import { DEFAULT_PROGRAM_IDS } from '../chain/programs/programIds.js';
import { planLaunchCosts, type LaunchCosts } from '../chain/steps/launchCosts.js';
import type { LaunchPlan, StepName } from '../chain/steps/types.js';

/** The quote of a launch (docs/api.md, "Funding"): every lamport it will take from the owner's wallet. */
export interface LaunchQuote {
  accounts: Array<{ role: string; address: string | null; bytes: number; rentLamports: string; returned?: true }>;
  transactions: number;
  signatures: number;
  feeLamports: string;
  priorityFeeLamports: string;
  poolQuoteLamports: string;
  operatorFeeLamports: string;
  totalLamports: string;
  availableLamports: string;
  sufficient: boolean;
  shortfallLamports: string;
}

/** The costs of a plan on `chain`, paid by `payer`: the same planner the steps budget their sends with. */
export function launchCosts(chain: ChainBackend, plan: LaunchPlan, steps: readonly StepName[], payer: PublicKey, options?: { graduation?: boolean }): Promise<LaunchCosts> {
  return planLaunchCosts(chain, plan, steps, payer, DEFAULT_PROGRAM_IDS, options);
}

/** The API's quote from the planned costs and what the owner has available, exact (bigints, shown as decimal text). */
export function presentQuote(costs: LaunchCosts, availableLamports: bigint): LaunchQuote {
  const total = costs.totalLamports;
  const available = availableLamports > 0n ? availableLamports : 0n;
  const shortfall = total > available ? total - available : 0n;
  return {
    accounts: costs.steps.flatMap((s) =>
      s.accounts.map((a) => ({ role: a.role, address: null, bytes: a.bytes, rentLamports: String(a.rentLamports), ...(a.returned ? { returned: true as const } : {}) })),
    ),
    transactions: costs.transactions,
    signatures: costs.signatures,
    feeLamports: String(costs.feeLamports),
    priorityFeeLamports: String(costs.priorityFeeLamports),
    poolQuoteLamports: String(costs.poolQuoteLamports),
    operatorFeeLamports: String(costs.operatorFeeLamports),
    totalLamports: String(total),
    availableLamports: String(available),
    sufficient: shortfall === 0n,
    shortfallLamports: String(shortfall),
  };
}
