import { PublicKey, type TransactionInstruction } from '@solana/web3.js';
import {
  AuthorityType,
  createAssociatedTokenAccountIdempotentInstruction,
  createMintToInstruction,
  createSetAuthorityInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import { NonRetriableError } from '../../lib/retry.js';
import { splitSupply, totalBaseUnits } from './allocations.js';
import { readMint, tokenProgramOf } from './chainReads.js';
import { tokenAccountSize } from './costs.js';
import { sendOnce } from './support.js';
import type { StepContext, StepExecutor } from './types.js';

/**
 * distribute_supply: one transaction that creates the holders' associated token accounts, mints
 * every allocation (creator share to the creator, the rest to the payer's launch wallet), then
 * hands the mint and freeze authorities to the creator or revokes them (`revokeMintAuthority`).
 * Result: `{allocations: [{kind, owner, tokenAccount, amount}]}` with amounts in base units.
 */
export const distributeSupply: StepExecutor = async (ctx) => {
  const { plan, chain } = ctx;
  const mint = ctx.keys.mint.publicKey;
  const programId = tokenProgramOf(plan);
  const payer = ctx.payer.publicKey;
  const creator = new PublicKey(plan.creator);
  const shares = splitSupply(plan);
  const ownerOf = (held: 'creator' | 'payer') => (held === 'creator' ? creator : payer);
  const ataOf = (owner: PublicKey) => getAssociatedTokenAddressSync(mint, owner, true, programId);
  const owners = [...new Map(shares.map((s) => [ownerOf(s.held).toBase58(), ownerOf(s.held)])).values()];
  const rentLamports = owners.length * (await chain.getMinimumBalanceForRentExemption(tokenAccountSize(plan.tokenStandard)));
  const newAuthority = plan.revokeMintAuthority ? null : creator;

  const instructions = (): TransactionInstruction[] => [
    ...owners.map((owner) => createAssociatedTokenAccountIdempotentInstruction(payer, ataOf(owner), owner, mint, programId)),
    ...owners.map((owner) => {
      const amount = shares.filter((s) => ownerOf(s.held).equals(owner)).reduce((sum, s) => sum + s.amount, 0n);
      return createMintToInstruction(mint, ataOf(owner), payer, amount, [], programId);
    }),
    createSetAuthorityInstruction(mint, payer, AuthorityType.MintTokens, newAuthority, [], programId),
    createSetAuthorityInstruction(mint, payer, AuthorityType.FreezeAccount, newAuthority, [], programId),
  ];

  const sent = await sendOnce(ctx, {
    label: 'distribute_supply',
    type: 'distribution',
    instructions,
    signers: [],
    rentLamports,
    postcondition: () => supplyMinted(ctx),
  });
  const allocations = shares.map((s) => ({
    kind: s.kind,
    owner: ownerOf(s.held).toBase58(),
    tokenAccount: ataOf(ownerOf(s.held)).toBase58(),
    amount: s.amount.toString(),
  }));
  return { result: { allocations }, transactions: sent ? [{ type: sent.type, signature: sent.signature }] : [] };
};

/** Postcondition: the full supply is minted (the transaction is atomic, so the split is too). */
export async function supplyMinted(ctx: StepContext): Promise<boolean> {
  const state = await readMint(ctx.chain, ctx.keys.mint.publicKey, tokenProgramOf(ctx.plan));
  if (!state) throw new NonRetriableError('program_error', 'mint does not exist; create_mint has not completed');
  if (state.supply === 0n) return false;
  if (state.supply !== totalBaseUnits(ctx.plan)) {
    throw new NonRetriableError('program_error', `mint supply ${state.supply} differs from the planned ${totalBaseUnits(ctx.plan)}`);
  }
  return true;
}
