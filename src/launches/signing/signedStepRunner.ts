import type { ChainBackend } from '../../chain/backend.js';
import { landSigned } from '../../chain/landSigned.js';
import type { LaunchRow } from '../../db/schema.js';
import { parseJson } from '../../lib/json.js';
import type { Logger } from '../../lib/logger.js';
import { NonRetriableError } from '../../lib/retry.js';
import type { StepRunner } from '../stepPort.js';
import { stepsFor } from '../steps.js';
import { CLOSE_NONCES } from './plan.js';
import type { Signing } from './signing.js';

/**
 * Before a creator-signed launch fails (a step that cannot land, the signing deadline, the
 * finalization): its `close_nonces` transaction, signed up front, gives every other nonce account's
 * rent back to the creator, and no transaction of the launch can land after it. Sent like any
 * creator-signed transaction, its status read first, so running it again (a crash before the
 * failure committed) sends nothing twice; nothing to do when the creator never signed it or it
 * landed already. A transient fault throws, so the failure waits and is reached again.
 */
export function returnNonceRent(deps: { chain: ChainBackend; signing: Pick<Signing, 'signedClose'>; logger: Logger }): (launch: LaunchRow) => Promise<void> {
  return async (launch) => {
    if (parseJson<{ signing?: string }>(launch.request, {}).signing !== 'creator') return;
    const close = await deps.signing.signedClose(launch.id);
    if (!close) return;
    const logger = deps.logger.child({ launchId: launch.id });
    try {
      // Not recorded as a step's pending transaction: its signature and nonce say on resume whether it went out.
      await landSigned({ chain: deps.chain, logger, pending: {}, recordPending: async () => undefined }, { label: CLOSE_NONCES, type: 'nonce_rent', postcondition: async () => false }, close);
      logger.info({ signature: close.signature }, 'nonce accounts’ rent returned to the creator before the launch fails');
    } catch (error) {
      if (!(error instanceof NonRetriableError)) throw error;
      logger.warn({ err: error }, 'the nonce accounts’ rent return did not land; the creator, their authority, can withdraw them');
    }
  };
}

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
