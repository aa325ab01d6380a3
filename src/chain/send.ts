import type { Keypair, Transaction, TransactionInstruction } from '@solana/web3.js';
import bs58 from 'bs58';
import { NonRetriableError } from '../lib/retry.js';
import type { BlockhashInfo, Commitment } from './backend.js';
import type { PendingTx, StepContext } from './steps/types.js';
import { serializeSigned } from './ed25519.js';
import { buildSignedTransaction, estimateFee } from './transaction.js';

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
 * The idempotent send procedure (SPEC §3). With no recorded transaction: pre-check the payer's
 * balance, sign, record (durably) and only then send and confirm. With a recorded one: a
 * confirmed signature is done; a failed one is a program error; an unknown one is done when the
 * postcondition holds, else re-sent as the same bytes while its blockhash is valid, else re-signed
 * with a fresh blockhash (recorded first). An old transaction can never land after a re-sign,
 * because re-signing waits for its blockhash to expire.
 */
export async function sendIdempotent(ctx: StepContext, spec: IdempotentSend): Promise<SendResult> {
  const { chain } = ctx;
  const commitment = spec.commitment ?? 'confirmed';
  const log = ctx.logger.child({ tx: spec.label });
  const recorded = ctx.pending[spec.label];
  if (recorded) {
    const status = await chain.getSignatureStatus(recorded.signature);
    if (status?.err) {
      throw new NonRetriableError('program_error', `${spec.type} transaction ${recorded.signature} failed on chain: ${String(status.err)}`);
    }
    if (status) {
      await chain.confirmTransaction(recorded.signature, recorded.lastValidBlockHeight, commitment);
      return { type: spec.type, signature: recorded.signature, via: 'recorded' };
    }
    if (await spec.postcondition()) {
      log.info({ signature: recorded.signature }, 'effect already on chain');
      return { type: spec.type, signature: recorded.signature, via: 'postcondition' };
    }
    if ((await chain.getBlockHeight()) <= recorded.lastValidBlockHeight) {
      log.info({ signature: recorded.signature }, 're-sending recorded transaction');
      await chain.sendRawTransaction(Buffer.from(recorded.serialized, 'base64'));
      await chain.confirmTransaction(recorded.signature, recorded.lastValidBlockHeight, commitment);
      return { type: spec.type, signature: recorded.signature, via: 'resent' };
    }
    log.info({ signature: recorded.signature }, 'recorded blockhash expired; re-signing');
  }

  const signatures = 1 + spec.signers.filter((s) => !s.publicKey.equals(chain.payer.publicKey)).length;
  const needed = spec.rentLamports + estimateFee(chain.fees, signatures);
  const balance = await chain.getBalance(chain.payer.publicKey);
  if (balance < needed) {
    throw new NonRetriableError(
      'insufficient_balance',
      `payer ${chain.payer.publicKey.toBase58()} holds ${balance} lamports; ${spec.type} needs at least ${needed}`,
    );
  }

  const blockhash = await chain.getLatestBlockhash();
  const pending = signForSend(ctx, spec, blockhash);
  await ctx.recordPending(spec.label, pending);
  ctx.pending[spec.label] = pending;
  await chain.sendRawTransaction(Buffer.from(pending.serialized, 'base64'));
  await chain.confirmTransaction(pending.signature, pending.lastValidBlockHeight, commitment);
  log.info({ signature: pending.signature }, 'transaction confirmed');
  return { type: spec.type, signature: pending.signature, via: 'sent' };
}

function signForSend(ctx: StepContext, spec: IdempotentSend, blockhash: BlockhashInfo): PendingTx {
  let tx: Transaction;
  let serialized: string;
  try {
    tx = buildSignedTransaction(ctx.chain, spec.instructions(), spec.signers, blockhash);
    serialized = serializeSigned(tx).toString('base64');
  } catch (error) {
    // e.g. a name or uri so long the transaction exceeds 1232 bytes: no retry makes it fit.
    throw new NonRetriableError('invalid_configuration', `${spec.type} transaction cannot be built: ${(error as Error).message}`, { cause: error });
  }
  if (!tx.signature) throw new Error('transaction is not signed');
  return { signature: bs58.encode(tx.signature), blockhash: blockhash.blockhash, lastValidBlockHeight: blockhash.lastValidBlockHeight, serialized };
}
