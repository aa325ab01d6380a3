import { createHash } from 'node:crypto';
import {
  NONCE_ACCOUNT_LENGTH,
  PublicKey,
  SystemProgram,
  Transaction,
  VersionedMessage,
  VersionedTransaction,
  type Keypair,
  type TransactionInstruction,
} from '@solana/web3.js';
import bs58 from 'bs58';
import type { ChainBackend } from '../../chain/backend.js';
import { signBytes } from '../../chain/ed25519.js';
import type { LaunchKeys } from '../../chain/keys.js';
import type { CapturedSend, LaunchPlan, StepExecutor, StepName } from '../../chain/steps/types.js';
import { withComputeBudget } from '../../chain/transaction.js';
import type { Logger } from '../../lib/logger.js';
import { NonRetriableError } from '../../lib/retry.js';

/** A transaction of the launch as planning captured it, with the step it belongs to. */
export interface PlannedTx extends CapturedSend {
  step: StepName;
}

/** A transaction offered for signing: the exact message bytes and the derived keys' signatures over them. */
export interface BuiltTx {
  message: Buffer;
  serviceSignatures: Record<string, string>;
}

/** The step name of the transaction that gives the nonce accounts' rent back. */
export const CLOSE_NONCES = 'close_nonces';
/** The step name of the transaction that creates the nonce accounts. */
export const SETUP = 'setup';

/**
 * Every transaction the launch's steps will send, in order, built by the steps' own executors in
 * capture mode: the same instructions, accounts and derived signers a service-paid launch signs,
 * with the creator as payer.
 */
export async function captureLaunch(
  deps: { chain: ChainBackend; executors: Partial<Record<StepName, StepExecutor>> },
  args: { plan: LaunchPlan; keys: LaunchKeys; steps: readonly StepName[]; creator: PublicKey; logger: Logger },
): Promise<PlannedTx[]> {
  const results: Record<string, unknown> = {};
  const planned: PlannedTx[] = [];
  for (const step of args.steps) {
    const executor = deps.executors[step];
    if (!executor) throw new NonRetriableError('invalid_configuration', `No executor for step ${step}`);
    const outcome = await executor({
      plan: args.plan,
      keys: args.keys,
      results: { ...results },
      pending: {},
      recordPending: () => Promise.reject(new Error('planning sends nothing')),
      chain: deps.chain,
      payer: { publicKey: args.creator },
      logger: args.logger,
      capture: (send) => planned.push({ ...send, step }),
    });
    Object.assign(results, outcome.result);
  }
  return planned;
}

/** The seed prefix of a launch's nonce accounts: 8 hex digits of its id's hash. */
export function nonceSeedOf(launchId: string): string {
  return createHash('sha256').update(`nonce-seed/v1/${launchId}`).digest('hex').slice(0, 8);
}

/** The nonce accounts of a launch: made with a seed from the creator, so the setup needs no other signer. */
export async function nonceAccounts(creator: PublicKey, seed: string, count: number): Promise<Array<{ address: PublicKey; seed: string }>> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const accountSeed = `${seed}${i.toString(36)}`;
      return { address: await PublicKey.createWithSeed(creator, accountSeed, SystemProgram.programId), seed: accountSeed };
    }),
  );
}

/** A setup transaction: creates each of its nonce accounts, rent paid by the creator, the creator their authority. */
export function buildSetup(
  chain: Pick<ChainBackend, 'fees'>,
  args: { creator: PublicKey; nonces: Array<{ address: PublicKey; seed: string }>; rentLamports: number; blockhash: string; lastValidBlockHeight: number },
): BuiltTx {
  const instructions = args.nonces.flatMap(({ address, seed }) => [
    SystemProgram.createAccountWithSeed({
      fromPubkey: args.creator,
      newAccountPubkey: address,
      basePubkey: args.creator,
      seed,
      lamports: args.rentLamports,
      space: NONCE_ACCOUNT_LENGTH,
      programId: SystemProgram.programId,
    }),
    SystemProgram.nonceInitialize({ noncePubkey: address, authorizedPubkey: args.creator }),
  ]);
  const tx = new Transaction({ feePayer: args.creator, blockhash: args.blockhash, lastValidBlockHeight: args.lastValidBlockHeight });
  tx.add(...withComputeBudget(chain.fees, instructions));
  return { message: compile(tx), serviceSignatures: {} };
}

/**
 * The setup transactions that create the given nonce accounts: as many accounts in each as fit in
 * one transaction (about five; a full launch needs eight nonce accounts, so two setups), in order.
 */
export function buildSetups(
  chain: Pick<ChainBackend, 'fees'>,
  args: { creator: PublicKey; nonces: Array<{ address: PublicKey; seed: string }>; rentLamports: number; blockhash: string; lastValidBlockHeight: number },
): BuiltTx[] {
  const built: BuiltTx[] = [];
  let from = 0;
  while (from < args.nonces.length) {
    let last: BuiltTx | undefined;
    let to = from + 1;
    for (; to <= args.nonces.length; to += 1) {
      try {
        last = buildSetup(chain, { ...args, nonces: args.nonces.slice(from, to) });
      } catch (error) {
        if (!(error instanceof NonRetriableError) || last === undefined) throw error;
        break;
      }
    }
    built.push(last!);
    from = to - 1;
  }
  return built;
}

/** A transaction on a durable nonce (advanced by its first instruction), signed by the derived keys it needs. */
export function buildNonced(
  chain: Pick<ChainBackend, 'fees'>,
  args: { creator: PublicKey; nonceAccount: PublicKey; nonce: string; instructions: TransactionInstruction[]; signers: Keypair[] },
): BuiltTx {
  const tx = new Transaction({
    feePayer: args.creator,
    nonceInfo: { nonce: args.nonce, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: args.nonceAccount, authorizedPubkey: args.creator }) },
  });
  tx.add(...withComputeBudget(chain.fees, args.instructions));
  const message = compile(tx);
  const serviceSignatures: Record<string, string> = {};
  for (const signer of args.signers) serviceSignatures[signer.publicKey.toBase58()] = bs58.encode(signBytes(signer, message));
  return { message, serviceSignatures };
}

/** The last transaction: every other nonce account's rent back to the creator (its own nonce account cannot close in the transaction that advances it). */
export function closeNoncesInstructions(creator: PublicKey, others: PublicKey[], rentLamports: number): TransactionInstruction[] {
  return others.map((noncePubkey) => SystemProgram.nonceWithdraw({ noncePubkey, authorizedPubkey: creator, toPubkey: creator, lamports: rentLamports }));
}

function compile(tx: Transaction): Buffer {
  const message = tx.serializeMessage();
  if (message.length + 1 + 64 * (message[0] ?? 1) > 1232) {
    throw new NonRetriableError('invalid_configuration', `a creator-signed transaction would be ${message.length} bytes before its signatures, over Solana's 1232-byte limit`);
  }
  return message;
}

/** The signers of a message, in order (the first is the fee payer). */
export function signersOf(message: Uint8Array): string[] {
  const parsed = VersionedMessage.deserialize(message);
  return parsed.staticAccountKeys.slice(0, parsed.header.numRequiredSignatures).map((k) => k.toBase58());
}

/** The wire bytes of a message with all its signatures (base58 by signer). */
export function assemble(message: Uint8Array, signatures: Record<string, string>): { serialized: Buffer; signature: string } {
  const parsed = VersionedMessage.deserialize(message);
  const signers = parsed.staticAccountKeys.slice(0, parsed.header.numRequiredSignatures).map((k) => k.toBase58());
  const sigs = signers.map((key) => {
    const sig = signatures[key];
    if (!sig) throw new Error(`missing the signature of ${key}`);
    return bs58.decode(sig);
  });
  const serialized = Buffer.from(new VersionedTransaction(parsed, sigs).serialize());
  return { serialized, signature: bs58.encode(sigs[0]!) };
}
