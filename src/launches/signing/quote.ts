import { NONCE_ACCOUNT_LENGTH, PublicKey } from '@solana/web3.js';
import type { ChainBackend } from '../../chain/backend.js';
import type { LaunchPlan, StepName } from '../../chain/steps/types.js';
import { estimateFee } from '../../chain/transaction.js';
import { launchCosts, presentQuote, type LaunchQuote } from '../../funding/quote.js';
import { buildSetups, nonceAccounts, nonceSeedOf } from './plan.js';

/** A creator-signed launch's quote: what the creator's wallet pays, against its balance; nothing is reserved. */
export interface CreatorQuote extends LaunchQuote {
  signing: 'creator';
  payer: string;
  balanceLamports: string;
  /**
   * A curve's graduation, which the creator does not sign for: the owner's funding wallet pays it
   * when the curve is full (docs/signing.md, "Bonding curves"); not in `totalLamports`.
   */
  graduation?: { paidBy: 'owner'; lamports: string };
}

/**
 * The quote of a creator-signed launch (docs/signing.md): the same planner as every launch with the
 * creator as payer, plus the setup transactions, the rent return and one nonce account per
 * transaction (`returned`: their rent comes back at the end, all but the rent-return's own).
 */
export async function creatorQuote(chain: ChainBackend, plan: LaunchPlan, steps: readonly StepName[]): Promise<CreatorQuote> {
  const creator = new PublicKey(plan.creator);
  // The graduation is not the creator's to pay: the owner's funding wallet pays it (docs/signing.md).
  const costs = await launchCosts(chain, plan, steps, creator, { graduation: false });
  const nonceCount = costs.transactions + 1;
  const rent = await chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
  const nonceRent = BigInt(nonceCount * rent);
  // The setups (as many as the nonce accounts need) and the rent return, each signed by the creator alone.
  const setups = buildSetups(chain, { creator, nonces: await nonceAccounts(creator, nonceSeedOf('quote'), nonceCount), rentLamports: 0, blockhash: PublicKey.default.toBase58(), lastValidBlockHeight: 0 }).length;
  const extra = setups + 1;
  const extraFee = BigInt(extra * estimateFee(chain.fees, 1));
  const withNonces = {
    ...costs,
    transactions: costs.transactions + extra,
    signatures: costs.signatures + extra,
    feeLamports: costs.feeLamports + BigInt(extra) * 5000n,
    priorityFeeLamports: costs.priorityFeeLamports + extraFee - BigInt(extra) * 5000n,
    rentLamports: costs.rentLamports + nonceRent,
    totalLamports: costs.totalLamports + nonceRent + extraFee,
  };
  const balance = await chain.getLamports(creator);
  const quote = presentQuote(withNonces, balance);
  for (let i = 0; i < nonceCount; i += 1) {
    quote.accounts.push({ role: 'nonce_account', address: null, bytes: NONCE_ACCOUNT_LENGTH, rentLamports: String(rent), ...(i < nonceCount - 1 ? { returned: true as const } : {}) });
  }
  const named = { ...quote, signing: 'creator' as const, payer: creator.toBase58(), balanceLamports: String(balance) };
  if (!steps.includes('create_curve')) return named;
  // What the graduation costs, as a funded launch's quote counts it: the owner's wallet pays it, so the quote names it apart.
  const graduation = (await launchCosts(chain, plan, steps, creator)).totalLamports - costs.totalLamports;
  return { ...named, graduation: { paidBy: 'owner', lamports: String(graduation) } };
}
