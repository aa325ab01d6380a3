import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, NATIVE_MINT } from '@solana/spl-token';
import { NonRetriableError } from '../../lib/retry.js';
import { poolLamports } from './costs.js';
import { decodeAmmConfig } from '../programs/cpmm/ammConfig.js';
import { ammConfigAddress } from '../programs/cpmm/pdas.js';
import { buildCreatePoolInstructions, type CreatePoolPlan } from '../programs/cpmm/poolInstructions.js';
import { decodePoolState } from '../programs/cpmm/poolState.js';
import { cpmmDeployment, type CpmmDeployment } from '../programs/programIds.js';
import { allocationAmount, planKey, requireProgram, sendOnce, solToLamports } from './support.js';
import { tokenProgramOf } from './chainReads.js';
import { DEFAULT_PROGRAM_IDS, type ProgramIds } from '../programs/programIds.js';
import { cpmmPoolOf, type StepContext, type StepExecutor } from './types.js';

/**
 * create_pool: one transaction on Raydium CPMM — wrap the quote SOL, create the SOL pool of the
 * launched mint with the pool allocation (mints in the program's byte order), and move every LP
 * token to the launch's creator. The pool address follows from the AmmConfig and the two mints.
 * Result: `{pool: {address, lpMint, …}}`.
 */
export function createPoolStep(ids: Pick<ProgramIds, 'pool'> = DEFAULT_PROGRAM_IDS, deployment?: CpmmDeployment): StepExecutor {
  const programId = new PublicKey(ids.pool);
  return async (ctx) => {
    const { plan, chain } = ctx;
    const pool = cpmmPoolOf(plan);
    if (!pool) throw new NonRetriableError('invalid_configuration', 'create_pool needs the pool section');
    if (pool.quoteMint !== NATIVE_MINT.toBase58()) {
      throw new NonRetriableError('invalid_configuration', `pool.quoteMint must be wrapped SOL (${NATIVE_MINT.toBase58()})`);
    }
    const cpmm = resolveDeployment(programId, deployment);
    await requireProgram(chain, programId, 'Raydium CPMM');
    const createPoolFee = await readCreatePoolFee(ctx, cpmm);
    const mint = ctx.keys.mint.publicKey;
    const tokenProgram = tokenProgramOf(plan);
    const payer = ctx.payer.publicKey;
    const quoteLamports = solToLamports(pool.quoteAmount);
    let built: CreatePoolPlan;
    try {
      built = buildCreatePoolInstructions({
        deployment: cpmm,
        payer,
        mint,
        mintTokenProgram: tokenProgram,
        payerToken: getAssociatedTokenAddressSync(mint, payer, true, tokenProgram),
        tokenAmount: allocationAmount(ctx, 'pool'),
        quoteLamports,
        lpRecipient: planKey(plan.creator, 'creator'),
      });
    } catch (cause) {
      if (cause instanceof RangeError) throw new NonRetriableError('invalid_configuration', cause.message, { cause });
      throw cause;
    }
    const { addresses } = built;
    const sent = await sendOnce(ctx, {
      label: 'create_pool',
      type: 'pool',
      instructions: () => built.instructions,
      signers: [],
      rentLamports: await poolLamports((size) => chain.getMinimumBalanceForRentExemption(size), plan.tokenStandard, quoteLamports, createPoolFee),
      postcondition: () => poolCreated(ctx, programId, addresses.pool),
    });
    if (ctx.capture) return { result: {}, transactions: [] }; // planning: nothing was sent, and no later step reads the pool
    if (!(await poolCreated(ctx, programId, addresses.pool))) {
      throw new NonRetriableError('program_error', `pool ${addresses.pool.toBase58()} is missing after its transaction`);
    }
    return {
      result: {
        pool: {
          address: addresses.pool.toBase58(),
          lpMint: addresses.lpMint.toBase58(),
          programId: programId.toBase58(),
          ammConfig: addresses.ammConfig.toBase58(),
          token0Mint: addresses.token0.toBase58(),
          token1Mint: addresses.token1.toBase58(),
          token0Vault: addresses.vault0.toBase58(),
          token1Vault: addresses.vault1.toBase58(),
          lpRecipient: plan.creator,
          lpTokenAccount: addresses.recipientLpToken.toBase58(),
          lpAmount: built.lpAmount.toString(),
          quoteLamports: quoteLamports.toString(),
        },
      },
      transactions: sent ? [{ type: sent.type, signature: sent.signature }] : [],
    };
  };
}

/** The default executor, on the mainnet CPMM id. */
export const createPool: StepExecutor = createPoolStep();

function resolveDeployment(programId: PublicKey, deployment: CpmmDeployment | undefined): CpmmDeployment {
  if (deployment) return deployment;
  try {
    return cpmmDeployment(programId);
  } catch (cause) {
    throw new NonRetriableError('invalid_configuration', (cause as Error).message, { cause });
  }
}

/** The pool-creation fee from the AmmConfig on chain; a missing or closed config stops the launch. */
async function readCreatePoolFee(ctx: StepContext, cpmm: CpmmDeployment): Promise<bigint> {
  const [address] = ammConfigAddress(cpmm.programId, cpmm.ammConfigIndex);
  const info = await ctx.chain.getAccountInfo(address);
  if (!info || !info.owner.equals(cpmm.programId)) {
    throw new NonRetriableError('chain_capability_missing', `CPMM AmmConfig ${address.toBase58()} (index ${cpmm.ammConfigIndex}) does not exist on the chain`);
  }
  const config = decodeAmmConfig(info.data);
  if (config.disableCreatePool) throw new NonRetriableError('invalid_configuration', `CPMM AmmConfig ${address.toBase58()} does not allow new pools`);
  return config.createPoolFee;
}

/** Postcondition: our pool exists; one created by someone else at the same address is a program error. */
export async function poolCreated(ctx: StepContext, programId: PublicKey, pool: PublicKey): Promise<boolean> {
  const info = await ctx.chain.getAccountInfo(pool);
  if (!info || !info.owner.equals(programId)) return false;
  const state = decodePoolState(info.data);
  if (!state.poolCreator.equals(ctx.payer.publicKey)) {
    throw new NonRetriableError('program_error', `pool ${pool.toBase58()} was created by ${state.poolCreator.toBase58()}, not by this service`);
  }
  return true;
}
