import { createHmac } from 'node:crypto';
import type { ChainBackend } from '../chain/backend.js';
import { deriveLaunchKeys } from '../chain/keys.js';
import { DEFAULT_PROGRAM_IDS } from '../chain/programs/programIds.js';
import { assertPayerCoversProgramSteps } from '../chain/steps/balance.js';
import type { StepExecutor, StepName } from '../chain/steps/types.js';
import { NonRetriableError } from '../lib/retry.js';
import { planFromRequest } from './plan.js';
import type { StepRunner } from './stepPort.js';

/** What the token steps need at most: mint and token-account rent plus fees, with margin. */
const TOKEN_STEPS_RESERVE_LAMPORTS = 20_000_000;

/** The master secret launch keys derive from: a purpose-bound derivation of SECRET_KEY. */
export function launchKeySecret(secretKey: Buffer): Buffer {
  return createHmac('sha256', secretKey).update('launch-keys/v1').digest();
}

/** Runs launch steps on the chain with the executors of `src/chain/steps`. */
export function createChainStepRunner(deps: { chain: ChainBackend; secretKey: Buffer; executors: Partial<Record<StepName, StepExecutor>> }): StepRunner {
  const master = launchKeySecret(deps.secretKey);
  return async (input) => {
    const executor = deps.executors[input.step];
    if (!executor) throw new NonRetriableError('invalid_configuration', `No executor for step ${input.step}`);
    const plan = planFromRequest(input.launchId, input.request);
    if (input.step === 'create_mint' && Object.keys(input.pending).length === 0) {
      // Refuse before the first transaction when the payer cannot cover the whole launch.
      await assertPayerCoversProgramSteps(deps.chain, plan, DEFAULT_PROGRAM_IDS, TOKEN_STEPS_RESERVE_LAMPORTS);
    }
    return executor({
      plan,
      keys: deriveLaunchKeys(master, input.launchId),
      results: input.results,
      pending: input.pending,
      recordPending: input.recordPending,
      chain: deps.chain,
      logger: input.logger,
    });
  };
}
