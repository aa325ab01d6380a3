import type { ChainBackend } from '../../chain/backend.js';
import { landSigned } from '../../chain/landSigned.js';
import { NonRetriableError } from '../../lib/retry.js';
import type { StepRunner } from '../stepPort.js';
import { stepsFor } from '../steps.js';
import { CLOSE_NONCES } from './plan.js';
import type { Signing } from './signing.js';

/**
 * The step runner for creator-signed launches (docs/signing.md): each step gets the transactions
 * the creator signed for it and lands them (the executors' own postconditions and read-backs
 * unchanged); after the launch's last step the nonce accounts' rent goes back to the creator. Other
 * launches go to `runStep` as they are.
 */
export function withCreatorSigning(deps: { chain: ChainBackend; signing: Pick<Signing, 'signedFor'> }, runStep: StepRunner): StepRunner {
  return async (input) => {
    if (input.request.signing !== 'creator') return runStep(input);
    const outcome = await runStep({ ...input, signing: await deps.signing.signedFor(input.launchId, input.step) });
    const steps = stepsFor(input.request as Parameters<typeof stepsFor>[0]);
    if (input.step !== steps[steps.length - 1]) return outcome;
    const close = (await deps.signing.signedFor(input.launchId, CLOSE_NONCES)).transactions[CLOSE_NONCES];
    if (!close) return outcome;
    try {
      const sent = await landSigned(
        { chain: deps.chain, logger: input.logger, pending: input.pending, recordPending: input.recordPending },
        { label: CLOSE_NONCES, type: 'nonce_rent', postcondition: async () => false },
        close,
      );
      return { ...outcome, transactions: [...outcome.transactions, { type: sent.type, signature: sent.signature }] };
    } catch (error) {
      // The launch is done; a rent return that can no longer land (the creator used that nonce) does not undo it.
      if (!(error instanceof NonRetriableError)) throw error;
      input.logger.warn({ err: error }, 'the nonce accounts’ rent return did not land; the creator, their authority, can withdraw them');
      return outcome;
    }
  };
}
