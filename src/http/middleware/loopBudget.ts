import type { MiddlewareHandler } from 'hono';
import type { LoopBudget } from '../../lib/loopBudget.js';
import type { AppEnv } from '../env.js';

/**
 * Request work takes its turn on the event loop ({@link LoopBudget}): a burst of requests read in
 * one poll phase runs a slice at a time, with new connections accepted and health answered in
 * between. Before authentication, so its hashing and the body's parsing wait their turn too.
 */
export function shareLoop(budget: LoopBudget): MiddlewareHandler<AppEnv> {
  return async function shareLoop(_c, next) {
    const turn = budget.enter();
    if (turn) await turn;
    await next();
  };
}
