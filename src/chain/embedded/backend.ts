import { address, lamports as toLamports } from '@solana/kit';
import { LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import type { ChainBackend, Commitment, SignatureStatus } from '../backend.js';
import { classifyTransactionFailure } from '../errors.js';
import { loadOrCreateGenesis, loadOrCreatePayer } from './payer.js';
import { findProgramFiles, type GenesisHook } from './programs.js';
import { createSvm, decodeTransaction, execute, readAccountInfo, readStored, restore, rollback, syncClock } from './svm.js';
import { findSignature, loadAccounts, saveProcessed, type ProcessedWrite } from './store.js';
import { BLOCKHASH_VALIDITY_BLOCKS, createTimeline } from './timeline.js';

/** Options of {@link createEmbeddedBackend}. */
export interface EmbeddedBackendOptions {
  db: Db;
  /** SECRET_KEY: seals the payer keypair stored in `service_meta`. */
  secretKey: Buffer;
  clock: Clock;
  logger: Logger;
  /** Directory of `<programId>.so` files loaded at start (CHAIN_PROGRAMS_DIR). */
  programsDir?: string | undefined;
  genesisHooks?: GenesisHook[];
  /** Automatic payer funding; `false` disables it (tests of insufficient balance). */
  funding?: { thresholdLamports: bigint; amountLamports: bigint } | false;
}

/** The embedded backend, with the extras only an in-process chain can offer. */
export interface EmbeddedBackend extends ChainBackend {
  readonly kind: 'embedded';
  /** Program ids loaded from the programs directory. */
  readonly loadedPrograms: string[];
  /** Credits lamports to an account (persisted). */
  airdrop(pubkey: PublicKey, lamports: bigint): Promise<void>;
  /** Applies a genesis hook now (and skips accounts that exist); no-op when its program is absent. */
  applyGenesisHook(hook: GenesisHook): Promise<void>;
}

const DEFAULT_FUNDING = { thresholdLamports: 10n * BigInt(LAMPORTS_PER_SOL), amountLamports: 100n * BigInt(LAMPORTS_PER_SOL) };

/**
 * LiteSVM in-process, made durable: accounts a transaction touches are committed to
 * `chain_accounts` (with the signature in `chain_signatures`) and restored at start.
 */
export async function createEmbeddedBackend(options: EmbeddedBackendOptions): Promise<EmbeddedBackend> {
  const { db, clock } = options;
  const logger = options.logger.child({ component: 'chain', backend: 'embedded' });
  const funding = options.funding === undefined ? DEFAULT_FUNDING : options.funding;
  const svm = createSvm();
  const genesis = await loadOrCreateGenesis(db, clock.now());
  const timeline = createTimeline(clock, genesis.genesisMs, genesis.chainId);
  syncClock(svm, timeline.now());

  const loadedPrograms: string[] = [];
  for (const program of findProgramFiles(options.programsDir)) {
    svm.addProgramFromFile(address(program.programId), program.path);
    loadedPrograms.push(program.programId);
  }
  const stored = await loadAccounts(db);
  for (const acc of stored) restore(svm, acc);
  const payer = await loadOrCreatePayer(db, options.secretKey);
  const payerAddress = address(payer.publicKey.toBase58());
  logger.info({ accounts: stored.length, programs: loadedPrograms, payer: payer.publicKey.toBase58() }, 'embedded chain restored');

  // One transaction at a time: LiteSVM is synchronous, but persisting is not.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  };
  const persist = (addresses: string[], signature?: ProcessedWrite['signature']) =>
    saveProcessed(db, { accounts: addresses.map((a) => ({ address: a, account: readStored(svm, a) })), signature }, clock.now());

  const airdropNow = async (pubkey: PublicKey, amount: bigint) => {
    svm.airdrop(address(pubkey.toBase58()), toLamports(amount));
    await persist([pubkey.toBase58()]);
  };
  const topUp = async () => {
    if (funding === false) return;
    const balance = svm.getBalance(address(payer.publicKey.toBase58())) ?? 0n;
    if (balance < funding.thresholdLamports) {
      await airdropNow(payer.publicKey, funding.amountLamports);
      logger.info({ lamports: funding.amountLamports.toString() }, 'embedded payer funded');
    }
  };

  const status = async (signature: string): Promise<SignatureStatus | null> => {
    const row = await findSignature(db, signature);
    if (!row) return null;
    return { status: 'finalized', err: row.err === null ? null : row.err };
  };

  const applyGenesisHook = async (hook: GenesisHook) => {
    if (readAccountInfo(svm, hook.programId)?.executable !== true) return;
    const accounts = hook.accounts({ payer: payer.publicKey, rentExempt: (size) => svm.minimumBalanceForRentExemption(BigInt(size)) });
    const created: string[] = [];
    for (const acc of accounts) {
      const addr = acc.address.toBase58();
      if (readStored(svm, addr) !== null) continue;
      restore(svm, { address: addr, lamports: acc.lamports, owner: acc.owner.toBase58(), executable: acc.executable ?? false, data: acc.data });
      created.push(addr);
    }
    if (created.length > 0) await persist(created);
    logger.info({ programId: hook.programId.toBase58(), created }, 'genesis accounts applied');
  };

  await serial(topUp);
  for (const hook of options.genesisHooks ?? []) await serial(() => applyGenesisHook(hook));

  const backend: EmbeddedBackend = {
    kind: 'embedded',
    payer,
    fees: { priorityFeeMicroLamports: 0, computeUnitLimit: undefined },
    loadedPrograms,
    async getLatestBlockhash() {
      const height = timeline.now().blockHeight;
      return { blockhash: timeline.blockhashAt(height), lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS };
    },
    async getBlockHeight() {
      return timeline.now().blockHeight;
    },
    sendRawTransaction(bytes) {
      return serial(async () => {
        const tx = decodeTransaction(bytes);
        if ((await status(tx.signature)) !== null) return tx.signature; // already processed
        if (timeline.validHeightOf(tx.blockhash) === undefined) {
          throw new TransientError(`blockhash ${tx.blockhash} not found or expired`, 'blockhash_expired');
        }
        const time = timeline.now();
        syncClock(svm, time);
        const before = tx.writable.map((a) => readStored(svm, a));
        const outcome = execute(svm, bytes);
        const failure = outcome.ok ? undefined : classifyTransactionFailure(outcome.text);
        if (outcome.ok || outcome.executed) {
          const err = outcome.ok ? null : (/err: (.*?), meta:/.exec(outcome.text)?.[1] ?? 'failed');
          try {
            await persist(tx.writable, { signature: tx.signature, slot: time.slot, err });
          } catch (error) {
            // Not durable means not landed: undo it in memory so the chain matches the database.
            tx.writable.forEach((a, i) => rollback(svm, a, before[i] ?? null));
            throw new TransientError(`embedded chain could not persist ${tx.signature}`, 'chain_persist_failed', { cause: error });
          }
        }
        if (outcome.ok) {
          await topUp();
          return tx.signature;
        }
        if (failure === undefined) return tx.signature;
        throw failure;
      });
    },
    getSignatureStatus: status,
    async confirmTransaction(signature, lastValidBlockHeight, _commitment?: Commitment) {
      const found = await status(signature);
      if (found?.err) throw new NonRetriableError('program_error', `transaction ${signature} failed: ${String(found.err)}`);
      if (found) return;
      if (timeline.now().blockHeight > lastValidBlockHeight) {
        throw new TransientError(`transaction ${signature} expired before landing`, 'blockhash_expired');
      }
      throw new TransientError(`transaction ${signature} has not landed`, 'transaction_not_found');
    },
    async getAccountInfo(pubkey) {
      return readAccountInfo(svm, pubkey);
    },
    async getBalance(pubkey) {
      return Number(svm.getBalance(address(pubkey.toBase58())) ?? 0n);
    },
    async getMinimumBalanceForRentExemption(size) {
      return Number(svm.minimumBalanceForRentExemption(BigInt(size)));
    },
    async isProgramExecutable(programId) {
      return readAccountInfo(svm, programId)?.executable === true;
    },
    async probe() {
      syncClock(svm, timeline.now());
      // The health check probes on every request: read the clock sysvar through getClock() and the
      // payer by a precomputed address, skipping the base58 round trips of an account read (~3x cheaper).
      const clock = svm.getClock();
      return {
        slot: Number(clock.slot),
        unixTimestamp: Number(clock.unixTimestamp),
        payerBalance: Number(svm.getBalance(payerAddress) ?? 0n),
      };
    },
    airdrop: (pubkey, amount) => serial(() => airdropNow(pubkey, amount)),
    applyGenesisHook: (hook) => serial(() => applyGenesisHook(hook)),
    async close() {
      await queue;
    },
  };
  return backend;
}
