import type { LaunchRequest } from './request.js';

/** Every step a launch can have, in execution order (SPEC §1). */
export const STEP_ORDER = ['create_mint', 'create_metadata', 'distribute_supply', 'create_vesting', 'create_dao', 'create_pool'] as const;
export type LaunchStepName = (typeof STEP_ORDER)[number];

/** The steps this request runs; the last three only when the request asks for them. */
export function stepsFor(req: Pick<LaunchRequest, 'vesting' | 'dao' | 'pool'>): LaunchStepName[] {
  return STEP_ORDER.filter((step) => {
    if (step === 'create_vesting') return req.vesting !== undefined;
    if (step === 'create_dao') return req.dao !== undefined;
    if (step === 'create_pool') return req.pool !== undefined;
    return true;
  });
}
