import { NonceAccount, PublicKey } from '@solana/web3.js';
import { NonRetriableError, TransientError } from '../lib/retry.js';
import type { ChainBackend, Commitment } from './backend.js';
import type { PendingTx, SignedTx, StepContext } from './steps/types.js';

/** Blocks a sent durable-nonce transaction is waited for before the step waits and looks again. */
const CONFIRM_WINDOW_BLOCKS = 150;

/**
 * Lands a transaction the creator signed (docs/signing.md), under the same crash-safety rules as
 * every send: recorded before it is sent, and on resume its status is read before anything is sent
 * again. It is never re-signed: the service holds no key that could. Its durable nonce decides what
 * an unknown status means: while the nonce account still holds the transaction's nonce it can land,
 * and the same bytes go out (again); once the nonce moved on, the transaction either landed (its
 * status or the step's postcondition says so) or can never land, which fails the launch
 * (`transaction_unlandable`).
 */
/** What landing needs of a step's context and send. */
type LandContext = Pick<StepContext, 'chain' | 'logger' | 'pending' | 'recordPending'>;
/** The transaction being landed: its label (pending record), type, and the effect that proves it landed. */
export interface LandSpec {
  label: string;
  type: string;
  postcondition(): Promise<boolean>;
  commitment?: Commitment | undefined;
}
/** The signature that holds the effect, as the idempotent send reports it. */
export interface LandResult {
  type: string;
  signature: string;
  via: 'sent' | 'resent' | 'recorded' | 'postcondition';
}

export async function landSigned(ctx: LandContext, spec: LandSpec, signed: SignedTx): Promise<LandResult> {
  const { chain } = ctx;
  const log = ctx.logger.child({ tx: spec.label, signature: signed.signature });
  const commitment = spec.commitment ?? 'confirmed';
  const done = await landedAlready(ctx, spec, signed);
  if (done) return done;
  const bytes = Buffer.from(signed.serialized, 'base64');
  if (!(await nonceHolds(chain, signed))) return unlandable(ctx, spec, signed);
  const pending: PendingTx = { signature: signed.signature, blockhash: signed.nonce, lastValidBlockHeight: (await chain.getBlockHeight()) + CONFIRM_WINDOW_BLOCKS, serialized: signed.serialized };
  const recorded = ctx.pending[spec.label];
  if (recorded?.signature !== signed.signature) {
    await ctx.recordPending(spec.label, pending);
    ctx.pending[spec.label] = pending;
  }
  try {
    await chain.sendRawTransaction(bytes);
  } catch (error) {
    // Refused without running (its nonce moved on meanwhile?): the chain says which.
    if (!(error instanceof TransientError)) throw error;
    const late = await landedAlready(ctx, spec, signed);
    if (late) return late;
    if (!(await nonceHolds(chain, signed))) return unlandable(ctx, spec, signed);
    throw error;
  }
  await chain.confirmTransaction(signed.signature, pending.lastValidBlockHeight, commitment, { rebroadcast: bytes });
  log.info('creator-signed transaction confirmed');
  return { type: spec.type, signature: signed.signature, via: recorded ? 'resent' : 'sent' };
}

/** The transaction's status: landed → done; failed → the step fails unless its effect is on chain anyway. */
async function landedAlready(ctx: LandContext, spec: LandSpec, signed: SignedTx): Promise<LandResult | undefined> {
  const status = await ctx.chain.getSignatureStatus(signed.signature);
  if (!status) return undefined;
  if (!status.err) {
    await ctx.chain.confirmTransaction(signed.signature, (await ctx.chain.getBlockHeight()) + CONFIRM_WINDOW_BLOCKS, spec.commitment ?? 'confirmed');
    return { type: spec.type, signature: signed.signature, via: 'recorded' };
  }
  if (await spec.postcondition()) return { type: spec.type, signature: signed.signature, via: 'postcondition' };
  throw new NonRetriableError('program_error', `${spec.type} transaction ${signed.signature} failed on chain: ${JSON.stringify(status.err)}`);
}

/** Whether the transaction's nonce account still holds its nonce (so it can still land). */
export async function nonceHolds(chain: Pick<ChainBackend, 'getAccountInfo'>, signed: Pick<SignedTx, 'nonceAccount' | 'nonce'>): Promise<boolean> {
  return (await currentNonce(chain, new PublicKey(signed.nonceAccount))) === signed.nonce;
}

/** The nonce a nonce account holds now, or undefined when it is none (never created, or closed). */
export async function currentNonce(chain: Pick<ChainBackend, 'getAccountInfo'>, account: PublicKey): Promise<string | undefined> {
  const info = await chain.getAccountInfo(account);
  if (!info || info.data.length !== 80) return undefined;
  try {
    return NonceAccount.fromAccountData(info.data).nonce;
  } catch {
    return undefined;
  }
}

async function unlandable(ctx: LandContext, spec: LandSpec, signed: SignedTx): Promise<LandResult> {
  // The nonce moved on: it landed just now, its effect is there by another way, or it never can.
  const late = await landedAlready(ctx, spec, signed);
  if (late) return late;
  if (await spec.postcondition()) return { type: spec.type, signature: signed.signature, via: 'postcondition' };
  throw new NonRetriableError(
    'transaction_unlandable',
    `${spec.type} transaction ${signed.signature} can no longer land: its nonce account ${signed.nonceAccount} no longer holds its nonce. ` +
      'The creator signed it and the service never signs in the creator\'s place, so the launch stops here',
  );
}
