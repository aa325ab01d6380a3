import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { NonRetriableError } from '../../lib/retry.js';
import { vestingRentLamports } from './costs.js';
import { decodeVestingEscrow, type VestingEscrowAccount } from '../programs/jupiterLock/escrowAccount.js';
import { escrowAddress, escrowTokenAddress } from '../programs/jupiterLock/pdas.js';
import { deriveVestingSchedule } from '../programs/jupiterLock/schedule.js';
import { buildCreateEscrowInstructions } from '../programs/jupiterLock/vestingInstructions.js';
import { allocationAmount, chainUnixTime, planKey, requireProgram, sendOnce } from './support.js';
import { tokenProgramOf } from './chainReads.js';
import { DEFAULT_PROGRAM_IDS, type ProgramIds } from '../programs/programIds.js';
import type { StepContext, StepExecutor } from './types.js';

/**
 * create_vesting: one transaction locking the vesting allocation (held by the payer) in a Jupiter
 * Lock escrow for `vesting.beneficiary`. The escrow address follows from the launch's derived
 * `base` key, so a resumed launch finds the escrow it may already have created. The schedule starts
 * at the chain's current time. Result: `{vestingContract, vesting: {escrow, …, schedule}}`, read
 * back from the escrow account.
 */
export function createVestingStep(ids: Pick<ProgramIds, 'vesting'> = DEFAULT_PROGRAM_IDS): StepExecutor {
  const programId = new PublicKey(ids.vesting);
  return async (ctx) => {
    const { plan, chain } = ctx;
    if (!plan.vesting) throw new NonRetriableError('invalid_configuration', 'create_vesting needs the vesting section');
    const recipient = planKey(plan.vesting.beneficiary, 'vesting.beneficiary');
    await requireProgram(chain, programId, 'Jupiter Lock');
    const mint = ctx.keys.mint.publicKey;
    const tokenProgram = tokenProgramOf(plan);
    const payer = ctx.payer.publicKey;
    const amount = allocationAmount(ctx, 'vesting');
    const escrow = escrowAddress(ctx.keys.base.publicKey, programId);
    const existing = () => readEscrow(ctx, escrow, programId, recipient, mint);

    // Only used when the escrow does not exist yet; then the schedule starts at chain time now.
    const start = (await existing()) === null ? await chainUnixTime(chain) : 0n;
    const params = deriveVestingSchedule(amount, start, plan.vesting);
    const { instructions } = buildCreateEscrowInstructions({
      base: ctx.keys.base.publicKey,
      payer,
      payerToken: getAssociatedTokenAddressSync(mint, payer, true, tokenProgram),
      recipient,
      mint,
      tokenProgram,
      params,
      programId,
    });
    const sent = await sendOnce(ctx, {
      label: 'create_vesting',
      type: 'vesting',
      instructions: () => instructions,
      signers: [ctx.keys.base],
      rentLamports: await vestingRentLamports((size) => chain.getMinimumBalanceForRentExemption(size), plan.tokenStandard),
      postcondition: async () => (await existing()) !== null,
    });

    if (ctx.capture) return { result: { vestingContract: escrow.toBase58() }, transactions: [] }; // planning: nothing was sent
    const state = await existing();
    if (!state) throw new NonRetriableError('program_error', `vesting escrow ${escrow.toBase58()} is missing after its transaction`);
    const schedule = {
      startTime: Number(state.vestingStartTime),
      cliffTime: Number(state.cliffTime),
      frequencySeconds: Number(state.frequency),
      cliffUnlockAmount: state.cliffUnlockAmount.toString(),
      amountPerPeriod: state.amountPerPeriod.toString(),
      numberOfPeriods: Number(state.numberOfPeriod),
    };
    return {
      result: {
        vestingContract: escrow.toBase58(),
        vesting: {
          escrow: escrow.toBase58(),
          escrowTokenAccount: escrowTokenAddress(escrow, mint, tokenProgram).toBase58(),
          programId: programId.toBase58(),
          recipient: state.recipient.toBase58(),
          mint: mint.toBase58(),
          amount: (state.cliffUnlockAmount + state.amountPerPeriod * state.numberOfPeriod).toString(),
          schedule,
        },
      },
      transactions: sent ? [{ type: sent.type, signature: sent.signature }] : [],
    };
  };
}

/** The default executor, on the mainnet Jupiter Lock id. */
export const createVesting: StepExecutor = createVestingStep();

/** The escrow if it exists for this launch; a foreign escrow at our address is a program error. */
async function readEscrow(ctx: StepContext, escrow: PublicKey, programId: PublicKey, recipient: PublicKey, mint: PublicKey): Promise<VestingEscrowAccount | null> {
  const info = await ctx.chain.getAccountInfo(escrow);
  if (!info || !info.owner.equals(programId)) return null;
  const state = decodeVestingEscrow(info.data);
  if (!state.recipient.equals(recipient) || !state.tokenMint.equals(mint)) {
    throw new NonRetriableError('program_error', `escrow ${escrow.toBase58()} exists with another recipient or mint`);
  }
  return state;
}
