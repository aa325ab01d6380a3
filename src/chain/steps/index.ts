import { createCurve } from './createCurve.js';
import { createDao } from './createDao.js';
import { createMetadata } from './createMetadata.js';
import { createMint } from './createMint.js';
import { createPool } from './createPool.js';
import { createVesting } from './createVesting.js';
import { distributeSupply } from './distributeSupply.js';
import type { StepExecutor, StepName } from './types.js';

export type { CapabilityGap, LaunchPlan, PendingTx, RequiredProgram, StepContext, StepExecutor, StepName, StepOutcome } from './types.js';
export { requiredPrograms } from './requiredPrograms.js';

/** Executors of every launch step. */
export const stepExecutors: Partial<Record<StepName, StepExecutor>> = {
  create_mint: createMint,
  create_metadata: createMetadata,
  distribute_supply: distributeSupply,
  create_vesting: createVesting,
  create_dao: createDao,
  create_pool: createPool,
  create_curve: createCurve,
};
