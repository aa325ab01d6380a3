import { STEP_ORDER, type StepName } from '../chain/steps/types.js';
import { NonRetriableError } from '../lib/retry.js';
import type { LaunchRequest } from './request.js';

/** The steps this request runs; the last three only when the request asks for them. */
export function stepsFor(req: Pick<LaunchRequest, 'vesting' | 'dao' | 'pool'>): StepName[] {
  return STEP_ORDER.filter((step) => {
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
