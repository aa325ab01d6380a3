import { STEP_ORDER, type StepName } from '../chain/steps/types.js';
import { NonRetriableError } from '../lib/retry.js';
import type { LaunchRequest } from './request.js';

/**
 * The steps this request runs: a bonding-curve launch is the curve (the program creates the mint,
 * its metadata and the supply), then its DAO when asked (a realm on the launched mint); otherwise
 * the token steps, then vesting, DAO and pool when asked.
 */
export function stepsFor(req: Pick<LaunchRequest, 'vesting' | 'dao' | 'pool'>): StepName[] {
  if (req.pool?.kind === 'bonding-curve') return req.dao === undefined ? ['create_curve'] : ['create_curve', 'create_dao'];
  return STEP_ORDER.filter((step) => {
    if (step === 'create_curve') return false;
    if (step === 'create_vesting') return req.vesting !== undefined;
    if (step === 'create_dao') return req.dao !== undefined;
    if (step === 'create_pool') return req.pool !== undefined;
    return true;
  });
}

/** A step name read back from the database; an unknown one fails the launch instead of being cast. */
export function asStepName(name: string): StepName {
  if ((STEP_ORDER as readonly string[]).includes(name)) return name as StepName;
  throw new NonRetriableError('invalid_configuration', `Unknown launch step ${name}`);
}
