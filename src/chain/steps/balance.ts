import { PublicKey } from '@solana/web3.js';
import { NonRetriableError } from '../../lib/retry.js';
import type { ChainBackend } from '../backend.js';
import type { ProgramIds } from '../programs/programIds.js';
import { cpmmPoolOf, type LaunchPlan } from './types.js';
import { estimateFee } from '../transaction.js';
import { decodeAmmConfig } from '../programs/cpmm/ammConfig.js';
import { DEFAULT_AMM_CONFIG_FEES } from '../programs/cpmm/genesis.js';
import { ammConfigAddress } from '../programs/cpmm/pdas.js';
import { daoRentLamports, poolLamports, vestingRentLamports } from './costs.js';
import { cpmmDeployment } from '../programs/programIds.js';
import { solToLamports } from './support.js';

/** What the vesting, DAO and pool steps of a plan will spend, in lamports, by step. */
export interface ProgramStepCosts {
  create_vesting: number;
  create_dao: number;
  create_pool: number;
  total: number;
}

/** The pool-creation fee the chain's AmmConfig charges (mainnet's 0.15 SOL when it cannot be read). */
export async function createPoolFee(chain: ChainBackend, poolProgram: string): Promise<bigint> {
  try {
    const deployment = cpmmDeployment(new PublicKey(poolProgram));
    const info = await chain.getAccountInfo(ammConfigAddress(deployment.programId, deployment.ammConfigIndex)[0]);
    if (info) return decodeAmmConfig(info.data).createPoolFee;
  } catch {
    // Unknown deployment or foreign data: the step itself will say so; budget the usual fee.
  }
  return DEFAULT_AMM_CONFIG_FEES.createPoolFee;
}

/**
 * Lamports the plan's vesting, DAO and pool steps need: rent of every account they create,
 * transaction fees under the backend's fee settings, the pool-creation fee and the quote SOL.
 */
export async function programStepCosts(chain: ChainBackend, plan: LaunchPlan, ids: Pick<ProgramIds, 'pool'>): Promise<ProgramStepCosts> {
  const rent = (size: number) => chain.getMinimumBalanceForRentExemption(size);
  const costs = { create_vesting: 0, create_dao: 0, create_pool: 0 };
  if (plan.vesting) costs.create_vesting = (await vestingRentLamports(rent, plan.tokenStandard)) + estimateFee(chain.fees, 2);
  if (plan.dao) costs.create_dao = (await daoRentLamports(rent, plan.dao.name)) + estimateFee(chain.fees, 1);
  const cpmm = cpmmPoolOf(plan);
  if (cpmm) {
    const quote = solToLamports(cpmm.quoteAmount);
    costs.create_pool = (await poolLamports(rent, plan.tokenStandard, quote, await createPoolFee(chain, ids.pool))) + estimateFee(chain.fees, 1);
  }
  return { ...costs, total: costs.create_vesting + costs.create_dao + costs.create_pool };
}

/**
 * Fails with `insufficient_balance` before anything is sent when the payer cannot cover the
 * plan's vesting, DAO and pool steps on top of `reservedLamports` (e.g. the token steps' needs).
 */
export async function assertPayerCoversProgramSteps(
  chain: ChainBackend,
  payer: PublicKey,
  plan: LaunchPlan,
  ids: Pick<ProgramIds, 'pool'>,
  reservedLamports = 0,
): Promise<ProgramStepCosts> {
  const costs = await programStepCosts(chain, plan, ids);
  const balance = await chain.getBalance(payer);
  const needed = costs.total + reservedLamports;
  if (balance < needed) {
    throw new NonRetriableError(
      'insufficient_balance',
      `payer ${payer.toBase58()} holds ${balance} lamports; vesting, DAO and pool need ${needed} ` +
        `(vesting ${costs.create_vesting}, dao ${costs.create_dao}, pool ${costs.create_pool} incl. quote and pool fee)`,
    );
  }
  return costs;
}
