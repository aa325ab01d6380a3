import { Keypair, type Transaction, type TransactionInstruction } from '@solana/web3.js';
import bs58 from 'bs58';
import { NonRetriableError, TransientError } from '../lib/retry.js';
import { openSpan, within } from '../lib/tracing.js';
import type { BlockhashInfo, Commitment, FeeSettings } from './backend.js';
import type { PendingTx, StepContext } from './steps/types.js';
import { serializeSigned } from './ed25519.js';
import { buildSignedTransaction, estimateFee } from './transaction.js';
import { landSigned } from './landSigned.js';

/** One transaction of a step, described so it can be (re)built and its effect checked. */
export interface IdempotentSend {
  /** Stable per step: the key its pending transaction is recorded under. */
  label: string;
  /** Type reported in the step's transactions list (e.g. `create_mint`). */
  type: string;
  instructions(): TransactionInstruction[];
  /** Signers besides the payer. */
  signers: Keypair[];
  /** True when the transaction's effect is already on chain (e.g. the mint exists). */
  postcondition(): Promise<boolean>;
  /** Lamports the payer spends besides fees (rent of created accounts). */
  rentLamports: number;
  commitment?: Commitment;
}

/** Result of {@link sendIdempotent}: the signature that holds the effect. */
export interface SendResult {
  type: string;
  signature: string;
  /** How the effect was established: sent now, confirmed from a recorded tx, or found on chain. */
  via: 'sent' | 'resent' | 'recorded' | 'postcondition';
}

/**
 * The idempotent send procedure (docs/api.md). With no recorded transaction: pre-check the payer's
 * balance, sign, record (durably) and only then send and confirm. With a recorded one: any
 * signature the step ever signed that landed successfully is done; one that failed on chain is a
 * failure only when the postcondition does not hold (the effect may have landed through another
 * signature); an unknown one is done when the postcondition holds, else re-sent as the same bytes
 * while its blockhash is valid, else — after checking every status once more, since a
 * transaction can land right before its blockhash expires — re-signed with a fresh blockhash. The
 * new record keeps every earlier signature. An old transaction can never land after a re-sign,
 * because re-signing waits for its blockhash to expire. Any transaction error is checked against
 * the postcondition before it fails the step.
 */
export async function sendIdempotent(ctx: StepContext, spec: IdempotentSend): Promise<SendResult> {
  // Tracing on: a span per transaction, under its step's (docs/architecture.md, "Tracing").
  const span = openSpan(`chain.transaction ${spec.type}`, { kind: 'client', attributes: { 'chain.tx.label': spec.label, 'chain.tx.type': spec.type } });
  try {
    const result = await within(span, () => sendChecked(ctx, spec));
    span?.setAttributes({ 'chain.tx.signature': result.signature, 'chain.tx.via': result.via });
    span?.end();
    return result;
  } catch (error) {
    span?.end(error);
    throw error;
  }
}

async function sendChecked(ctx: StepContext, spec: IdempotentSend): Promise<SendResult> {
  if (ctx.signed) {
    // A creator-signed launch: the creator's signed bytes go out as they are (never re-signed).
    const signed = ctx.signed[spec.label];
    if (!signed) throw new NonRetriableError('invalid_configuration', `no signed transaction for ${spec.label}; the creator-signed plan does not match the launch`);
    return landSigned(ctx, spec, signed);
  }
  try {
    return await sendOrResume(ctx, spec);
  } catch (error) {
    // A transaction error with the effect on chain (it landed late, or through another signature) is success.
    if (!(error instanceof NonRetriableError) || error.code !== 'program_error') throw error;
    if (!(await spec.postcondition())) throw error;
    const recorded = ctx.pending[spec.label];
    ctx.logger.info({ tx: spec.label, signature: recorded?.signature }, 'transaction reported a failure but its effect is on chain');
    return { type: spec.type, signature: (await landedSignature(ctx, recorded)) ?? recorded?.signature ?? '', via: 'postcondition' };
  }
}

/** Every signature a pending record holds, newest first. */
function signaturesOf(recorded: PendingTx): Array<{ signature: string; lastValidBlockHeight: number }> {
  return [{ signature: recorded.signature, lastValidBlockHeight: recorded.lastValidBlockHeight }, ...[...(recorded.earlier ?? [])].reverse()];
}

/** The recorded signature that landed without error, if any. */
async function landedSignature(ctx: StepContext, recorded: PendingTx | undefined): Promise<string | undefined> {
  if (!recorded) return undefined;
  for (const s of signaturesOf(recorded)) {
    const status = await ctx.chain.getSignatureStatus(s.signature);
    if (status && !status.err) return s.signature;
  }
  return undefined;
}

async function sendOrResume(ctx: StepContext, spec: IdempotentSend): Promise<SendResult> {
  const { chain } = ctx;
  const commitment = spec.commitment ?? 'confirmed';
  const log = ctx.logger.child({ tx: spec.label });
  const recorded = ctx.pending[spec.label];
  if (recorded) {
    const resolved = await resolveRecorded(ctx, spec, recorded);
    if (resolved) return resolved;
    if (await spec.postcondition()) {
      log.info({ signature: recorded.signature }, 'effect already on chain');
      return { type: spec.type, signature: recorded.signature, via: 'postcondition' };
    }
    if ((await chain.getBlockHeight()) <= recorded.lastValidBlockHeight) {
      log.info({ signature: recorded.signature }, 're-sending recorded transaction');
      const bytes = Buffer.from(recorded.serialized, 'base64');
      await chain.sendRawTransaction(bytes);
      await chain.confirmTransaction(recorded.signature, recorded.lastValidBlockHeight, commitment, { rebroadcast: bytes });
      return { type: spec.type, signature: recorded.signature, via: 'resent' };
    }
    // Expired: it can no longer land, but it may have landed just before. Look once more.
    const late = await resolveRecorded(ctx, spec, recorded);
    if (late) return late;
    if (await spec.postcondition()) return { type: spec.type, signature: recorded.signature, via: 'postcondition' };
    log.info({ signature: recorded.signature }, 'recorded blockhash expired; re-signing');
  }

  const payer = ctx.payer.publicKey;
  const signatures = 1 + spec.signers.filter((s) => !s.publicKey.equals(payer)).length;
  const needed = spec.rentLamports + estimateFee(chain.fees, signatures);
  // A launch paid by an owner's wallet never spends past what it reserved (docs/funding.md).
  if (ctx.budget && BigInt(needed) > ctx.budget.remainingLamports) {
    throw new NonRetriableError(
      'reservation_exceeded',
      `${spec.type} needs up to ${needed} lamports but only ${ctx.budget.remainingLamports} of the launch's reservation remain; nothing was sent`,
    );
  }
  const balance = await chain.getBalance(payer);
  if (balance < needed) {
    throw new NonRetriableError('insufficient_balance', `payer ${payer.toBase58()} holds ${balance} lamports; ${spec.type} needs at least ${needed}`);
  }

  const blockhash = await chain.getLatestBlockhash();
  const signed = await signForSend(ctx, spec, blockhash);
  // Keep every signature this step ever signed: any of them may still be the one that landed.
  const earlier = recorded ? [...(recorded.earlier ?? []), { signature: recorded.signature, lastValidBlockHeight: recorded.lastValidBlockHeight }] : undefined;
  const pending: PendingTx = earlier ? { ...signed, earlier } : signed;
  await ctx.recordPending(spec.label, pending);
  ctx.pending[spec.label] = pending;
  const bytes = Buffer.from(pending.serialized, 'base64');
  try {
    await chain.sendRawTransaction(bytes);
  } catch (error) {
    // The payer's balance is read, not inferred from an error text: with funds, it is not the balance.
    if (error instanceof NonRetriableError && error.code === 'insufficient_balance' && (await chain.getBalance(payer)) >= needed) {
      throw new TransientError('account_underfunded', `${spec.type} was refused for lack of funds although the payer holds enough: ${error.message}`, { cause: error });
    }
    throw error;
  }
  if (ctx.budget) ctx.budget.remainingLamports -= BigInt(needed);
  // Until it is seen or its blockhash expires, the same bytes go out again every ~2 s (RPC).
  await chain.confirmTransaction(pending.signature, pending.lastValidBlockHeight, commitment, { rebroadcast: bytes });
  log.info({ signature: pending.signature }, 'transaction confirmed');
  return { type: spec.type, signature: pending.signature, via: 'sent' };
}

/**
 * Checks every recorded signature: one that landed is confirmed and returned; a failed one fails
 * the step unless the postcondition holds; none known → undefined.
 */
async function resolveRecorded(ctx: StepContext, spec: IdempotentSend, recorded: PendingTx): Promise<SendResult | undefined> {
  const commitment = spec.commitment ?? 'confirmed';
  let failed: { signature: string; err: unknown } | undefined;
  for (const s of signaturesOf(recorded)) {
    const status = await ctx.chain.getSignatureStatus(s.signature);
    if (!status) continue;
    if (status.err) {
      failed ??= { signature: s.signature, err: status.err };
      continue;
    }
    await ctx.chain.confirmTransaction(s.signature, s.lastValidBlockHeight, commitment);
    return { type: spec.type, signature: s.signature, via: 'recorded' };
  }
  if (!failed) return undefined;
  if (await spec.postcondition()) return { type: spec.type, signature: failed.signature, via: 'postcondition' };
  throw new NonRetriableError('program_error', `${spec.type} transaction ${failed.signature} failed on chain: ${String(failed.err)}`);
}

async function signForSend(ctx: StepContext, spec: IdempotentSend, blockhash: BlockhashInfo): Promise<PendingTx> {
  const payer = ctx.payer;
  // Only a payer whose key the service holds is ever signed for: never a creator's (docs/signing.md).
  if (!(payer instanceof Keypair)) throw new NonRetriableError('invalid_configuration', `${spec.type}: the payer ${payer.publicKey.toBase58()} signs its own transactions; the service never signs for it`);
  let tx: Transaction;
  let serialized: string;
  let budget: FeeSettings | undefined;
  try {
    tx = buildSignedTransaction(ctx.chain, payer, spec.instructions(), spec.signers, blockhash);
    if (ctx.chain.networkBudget) {
      // Price and unit limit from the network; the same instructions signed again under them.
      budget = await ctx.chain.networkBudget(tx);
      tx = buildSignedTransaction({ fees: budget }, payer, spec.instructions(), spec.signers, blockhash);
    }
    serialized = serializeSigned(tx).toString('base64');
  } catch (error) {
    if (error instanceof TransientError || error instanceof NonRetriableError) throw error;
    // e.g. a name or uri so long the transaction exceeds 1232 bytes: no retry makes it fit.
    throw new NonRetriableError('invalid_configuration', `${spec.type} transaction cannot be built: ${(error as Error).message}`, { cause: error });
  }
  if (!tx.signature) throw new Error('transaction is not signed');
  const signed: PendingTx = { signature: bs58.encode(tx.signature), blockhash: blockhash.blockhash, lastValidBlockHeight: blockhash.lastValidBlockHeight, serialized };
  if (budget) signed.computeBudget = { priorityFeeMicroLamports: budget.priorityFeeMicroLamports, computeUnitLimit: budget.computeUnitLimit };
  return signed;
}
