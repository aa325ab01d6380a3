import type { Logger } from 'pino';
import type { PendingTx, SignedTx, StepName, StepOutcome } from '../chain/steps/types.js';

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
  budgetLamports?: bigint | undefined;
  /**
   * A creator-signed launch (docs/signing.md): the creator pays (its address) and this step's
   * transactions are the ones the creator signed, by label; nothing is signed by the service.
   */
  signing?: { payer: string; transactions: Record<string, SignedTx> } | undefined;
  /** Persists a signed transaction before it is sent; resolves once it is durable. */
  recordPending(label: string, tx: PendingTx): Promise<void>;
  logger: Logger;
}

export type StepRunner = (input: StepRunInput) => Promise<StepOutcome>;

/** What the payer paid in each landed transaction of a step (see chainStepRunner.ts). */
export type StepSpends = NonNullable<StepOutcome['spent']>;

const SPENT = Symbol('stepSpends');

/**
 * Carries on a failed step's error what its landed transactions cost the payer: a transaction that
 * landed and failed still took its fee, and the funding ledger records every lamport the wallet pays.
 */
export function withStepSpends(error: unknown, spent: StepSpends): unknown {
  if (spent.length > 0 && typeof error === 'object' && error !== null) Object.defineProperty(error, SPENT, { value: spent, enumerable: false, configurable: true });
  return error;
}

/** The spends a failed step's error carries (none when it carries none). */
export function stepSpendsOf(error: unknown): StepSpends {
  return typeof error === 'object' && error !== null ? ((error as { [SPENT]?: StepSpends })[SPENT] ?? []) : [];
}
