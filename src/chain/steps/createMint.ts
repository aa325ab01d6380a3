import { PublicKey, SystemProgram, type TransactionInstruction } from '@solana/web3.js';
import { createInitializeMetadataPointerInstruction, createInitializeMint2Instruction } from '@solana/spl-token';
import { readMint, tokenProgramOf } from './chainReads.js';
import { createInitializeTokenMetadataInstruction, readTokenMetadata } from '../programs/token2022/tokenMetadata.js';
import { mintFundedSize } from './launchCosts.js';
import { sendOnce } from './support.js';
import type { StepContext, StepExecutor } from './types.js';

/**
 * create_mint: one transaction creating the mint with the payer as mint and freeze authority
 * (handed over at the end of distribute_supply). Token-2022 mints also get the MetadataPointer
 * extension pointing at themselves and the token-metadata extension (name, symbol = ticker, uri),
 * whose update authority is the creator. Result: `{mint}`.
 */
export const createMint: StepExecutor = async (ctx) => {
  const { plan, chain, keys } = ctx;
  const mint = keys.mint.publicKey;
  const programId = tokenProgramOf(plan);
  const payer = ctx.payer.publicKey;
  const creator = new PublicKey(plan.creator);
  const is2022 = plan.tokenStandard === 'token-2022';
  const fields = { name: plan.name, symbol: plan.ticker, uri: plan.uri };
  // Token-2022 grows the account when metadata is written; fund the size it will really have.
  const { space, funded } = mintFundedSize(plan);
  const rentLamports = await chain.getMinimumBalanceForRentExemption(funded);

  const instructions = (): TransactionInstruction[] => {
    const ixs: TransactionInstruction[] = [
      SystemProgram.createAccount({ fromPubkey: payer, newAccountPubkey: mint, space, lamports: rentLamports, programId }),
    ];
    // The operator's fee rides in the launch's first transaction: paid exactly once, with the mint.
    if (plan.operatorFee && plan.operatorFee.lamports > 0) {
      ixs.push(SystemProgram.transfer({ fromPubkey: payer, toPubkey: new PublicKey(plan.operatorFee.recipient), lamports: plan.operatorFee.lamports }));
    }
    if (is2022) ixs.push(createInitializeMetadataPointerInstruction(mint, creator, mint, programId));
    ixs.push(createInitializeMint2Instruction(mint, plan.decimals, payer, payer, programId));
    if (is2022) {
      ixs.push(createInitializeTokenMetadataInstruction({ programId, mint, updateAuthority: creator, mintAuthority: payer, ...fields }));
    }
    return ixs;
  };

  const sent = await sendOnce(ctx, {
    label: 'create_mint',
    type: 'mint',
    instructions,
    signers: [keys.mint],
    rentLamports: rentLamports + (plan.operatorFee?.lamports ?? 0),
    postcondition: () => mintCreated(ctx),
  });
  return { result: { mint: mint.toBase58() }, transactions: sent ? [{ type: sent.type, signature: sent.signature }] : [] };
};

/** Postcondition: the mint exists under the plan's token program (with its metadata for Token-2022). */
export async function mintCreated(ctx: StepContext): Promise<boolean> {
  const mint = await readMint(ctx.chain, ctx.keys.mint.publicKey, tokenProgramOf(ctx.plan));
  if (!mint?.isInitialized) return false;
  return ctx.plan.tokenStandard === 'spl-token' || readTokenMetadata(mint) !== null;
}
