import { createMetadata } from './createMetadata.js';
import { createMint } from './createMint.js';
import { distributeSupply } from './distributeSupply.js';
import type { StepExecutor, StepName } from './types.js';

export type { LaunchPlan, PendingTx, RequiredProgram, StepContext, StepExecutor, StepName, StepOutcome } from './types.js';
export { DEFAULT_PROGRAM_IDS, requiredPrograms, type ProgramIds } from './programIds.js';

/** Executors of the token steps; vesting, DAO and pool steps are added by their own modules. */
export const stepExecutors: Partial<Record<StepName, StepExecutor>> = {
  create_mint: createMint,
  create_metadata: createMetadata,
  distribute_supply: distributeSupply,
};
