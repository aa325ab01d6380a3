import type { Logger } from 'pino';
import type { PendingTx, StepName, StepOutcome } from '../chain/steps/types.js';

/**
 * The one port between the launch runner and whatever executes steps (the chain executors in
 * production, wrappers in tests): the runner hands over a step and its durable state, and gets
 * back the step's result and transactions.
 */
export interface StepRunInput {
  launchId: string;
  step: StepName;
  request: Record<string, unknown>;
  results: Record<string, unknown>;
  /** Transactions of this step recorded by earlier attempts, by label. */
  pending: Record<string, PendingTx>;
  /**
   * The seed of the funding wallet that pays the launch (its owner's); absent for a launch created
   * before funding existed, which the chain's own payer pays.
   */
  payerSeed?: Uint8Array | undefined;
  /** What the launch may still spend of its reservation (owner-funded launches). */
  budgetLamports?: number | undefined;
  /** Persists a signed transaction before it is sent; resolves once it is durable. */
  recordPending(label: string, tx: PendingTx): Promise<void>;
  logger: Logger;
}

export type StepRunner = (input: StepRunInput) => Promise<StepOutcome>;
