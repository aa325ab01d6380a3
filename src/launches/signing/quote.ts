import { NONCE_ACCOUNT_LENGTH, PublicKey } from '@solana/web3.js';
import type { ChainBackend } from '../../chain/backend.js';
import type { LaunchPlan, StepName } from '../../chain/steps/types.js';
import { estimateFee } from '../../chain/transaction.js';
import { launchCosts, presentQuote, type LaunchQuote } from '../../funding/quote.js';

/** A creator-signed launch's quote: what the creator's wallet pays, against its balance; nothing is reserved. */
export interface CreatorQuote extends LaunchQuote {
  signing: 'creator';
  payer: string;
  balanceLamports: string;
}

/**
 * The quote of a creator-signed launch (docs/signing.md): the same planner as every launch with the
 * creator as payer, plus the setup and rent-return transactions and one nonce account per
 * transaction (`returned`: their rent comes back at the end, all but the rent-return's own).
 */
export async function creatorQuote(chain: ChainBackend, plan: LaunchPlan, steps: readonly StepName[]): Promise<CreatorQuote> {
  const creator = new PublicKey(plan.creator);
  const costs = await launchCosts(chain, plan, steps, creator);
  const nonceCount = costs.transactions + 1;
  const rent = await chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
  const nonceRent = BigInt(nonceCount * rent);
  const extraFee = BigInt(2 * estimateFee(chain.fees, 1)); // the setup and the rent return, each signed by the creator alone
  const withNonces = {
    ...costs,
    transactions: costs.transactions + 2,
    signatures: costs.signatures + 2,
    feeLamports: costs.feeLamports + 2n * 5000n,
    priorityFeeLamports: costs.priorityFeeLamports + extraFee - 2n * 5000n,
    rentLamports: costs.rentLamports + nonceRent,
    totalLamports: costs.totalLamports + nonceRent + extraFee,
  };
  const balance = await chain.getLamports(creator);
  const quote = presentQuote(withNonces, balance);
  for (let i = 0; i < nonceCount; i += 1) {
    quote.accounts.push({ role: 'nonce_account', address: null, bytes: NONCE_ACCOUNT_LENGTH, rentLamports: String(rent), ...(i < nonceCount - 1 ? { returned: true as const } : {}) });
  }
  return { ...quote, signing: 'creator', payer: creator.toBase58(), balanceLamports: String(balance) };
}
