import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { address, lamports as toLamports } from '@solana/kit';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction, type AccountInfo } from '@solana/web3.js';
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import { loopTurn } from '../../lib/loopBudget.js';
import type { ChainBackend, Commitment, SignatureStatus } from '../backend.js';
import type { AccountFilter, ChainHistory } from '../history.js';
import { balancesAt, historyRecord, lastHistorySeq, signatureOutcomes, signaturesForAddress, snapshotBalances, storedTransaction, toHistoryTransaction } from './history.js';
import { scanAccounts } from './scan.js';
import { classifyTransactionFailure } from '../errors.js';
import { loadOrCreateGenesis, loadOrCreatePayer } from './payer.js';
import { missingProgramsLine, type NamedProgram } from '../missingPrograms.js';
import { createProgramCloner, programCache, type CloneProgram, type ProgramCloner } from './clone.js';
import { findProgramFiles, programFileProblem, ProgramFileError, type GenesisHook } from './programs.js';
import { admitDurableNonce, renewNonce, balanceOf, createSvm, decodeTransaction, execute, readAccountInfo, readStored, restore, rollback, simulate, syncClock, type Execution } from './svm.js';
import { findSignature, loadAccounts, saveProcessed, type ProcessedWrite } from './store.js';
import { BLOCKHASH_VALIDITY_BLOCKS, createTimeline, type ChainTime } from './timeline.js';

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
  /**
   * CHAIN_CLONE_FROM: these programs, when not in the programs directory, come from `cacheDir`
   * (verified) or are fetched from `sourceUrl` in the background after the start, cached there and
   * loaded into the running chain (docs/chain.md).
   */
  clone?: { sourceUrl: string; programs: CloneProgram[]; cacheDir: string } | undefined;
  /**
   * The programs the launch steps call. Without `clone` (CHAIN_CLONE_FROM=off, or unset under test),
   * those not loaded at start are named in one warning line, the same line a launch needing them is
   * refused with.
   */
  expectedPrograms?: NamedProgram[] | undefined;
  /** Automatic payer funding; `false` disables it (tests of insufficient balance). */
  funding?: { thresholdLamports: bigint; amountLamports: bigint } | false;
  /**
   * Wraps every commit of the chain's state after the start. On its own thread (`thread/`) the
   * chain writes through a second connection to the service's file, and the gate has the main
   * thread hold its connection idle first, so the two never wait on each other's write lock.
   */
  writeGate?: <T>(write: () => Promise<T>) => Promise<T>;
}

/** The embedded backend, with the extras only an in-process chain can offer. */
export interface EmbeddedBackend extends ChainBackend {
  readonly kind: 'embedded';
  /** Program ids loaded from the programs directory, the clone cache, or fetched since the start. */
  readonly loadedPrograms: string[];
  /** Credits lamports to an account (persisted). */
  airdrop(pubkey: PublicKey, lamports: bigint): Promise<void>;
  /** Applies a genesis hook now (and skips accounts that exist); no-op when its program is absent. */
  applyGenesisHook(hook: GenesisHook): Promise<void>;
  /**
   * Credits lamports through a real transfer from the chain's faucet, so the airdrop has a
   * signature, a status and a place in the recipient's history (as `requestAirdrop` on a test validator).
   */
  requestAirdrop(pubkey: PublicKey, lamports: bigint): Promise<string>;
  /** Runs signed (or, with `sigVerify: false`, unsigned) transaction bytes without committing them. */
  simulate(bytes: Uint8Array, options: { sigVerify: boolean }): Promise<Execution>;
  /** The chain's current slot, height, epoch and time. */
  now(): ChainTime;
  /** The blockhash issued at a block height (for the JSON-RPC server's `isBlockhashValid`). */
  isBlockhashValid(blockhash: string): boolean;
  /** The hash of the chain's first block (`getGenesisHash`): tells two embedded chains apart. */
  readonly genesisHash: string;
  /** What the chain's timeline derives from: another thread builds the same timeline from it (`thread/`). */
  readonly timelineOrigin: { genesisMs: number; chainId: string };
  /** The watcher's reads; the embedded chain always answers `balancesAt`. */
  readonly history: ChainHistory & { balancesAt: NonNullable<ChainHistory['balancesAt']> };
  /** Transactions processed since genesis (with history). */
  transactionCount(): number;
  /** Slot and error (JSON form) of a processed signature, or null when never processed here. */
  signatureInfo(signature: string): Promise<{ slot: number; err: unknown } | null>;
  /** {@link signatureInfo} of many signatures in a few batched reads, in the order given. */
  signatureInfos(signatures: readonly string[]): Promise<Array<{ slot: number; err: unknown } | null>>;
  /** A processed transaction's bytes and meta, as `getTransaction` answers them. */
  storedTransaction(signature: string): ReturnType<typeof storedTransaction>;
  /** Every account a program owns, optionally filtered (`getProgramAccounts`). */
  programAccounts(programId: PublicKey, filters: AccountFilter[]): Promise<Array<{ pubkey: PublicKey; account: AccountInfo<Buffer> }>>;
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
  // The block height never goes backwards across a restart, even with the wall clock.
  const highest = await sql<{ slot: number | null }>`select max(slot) as slot from chain_signatures`.execute(db);
  const timeline = createTimeline(clock, genesis.genesisMs, genesis.chainId, Number(highest.rows[0]?.slot ?? 0));
  syncClock(svm, timeline.now());

  const loadedPrograms: string[] = [];
  const files = findProgramFiles(options.programsDir);
  if (files.ignored.length > 0) {
    logger.warn({ dir: options.programsDir, ignored: files.ignored }, 'CHAIN_PROGRAMS_DIR: ignoring files not named <programId>.so');
  }
  for (const program of files.programs) {
    const problem = programFileProblem(readFileSync(program.path));
    if (problem !== undefined) throw new ProgramFileError(program.path, program.programId, problem);
    try {
      svm.addProgramFromFile(address(program.programId), program.path);
    } catch (cause) {
      // LiteSVM's own words ("Offset or value is out of bounds" for a truncated file, …).
      throw new ProgramFileError(program.path, program.programId, (cause as Error).message.replace(/^Failed to add program: /, ''), { cause });
    }
    loadedPrograms.push(program.programId);
  }
  // Programs fetched on an earlier run: a cached binary that is not whole, or that the VM refuses, is
  // removed and fetched again rather than stopping the start.
  const clone = options.clone;
  for (const program of clone?.programs ?? []) {
    if (clone === undefined || loadedPrograms.includes(program.programId)) continue;
    const path = programCache.verified(clone.cacheDir, program.programId);
    if (path === undefined) continue;
    try {
      svm.addProgramFromFile(address(program.programId), path);
      loadedPrograms.push(program.programId);
    } catch (cause) {
      programCache.remove(clone.cacheDir, program.programId);
      logger.warn({ programId: program.programId, reason: (cause as Error).message }, 'cached program refused by the VM; it will be fetched again');
    }
  }
  const stored = await loadAccounts(db);
  for (const acc of stored) restore(svm, acc);
  const payer = await loadOrCreatePayer(db, options.secretKey);
  const payerAddress = address(payer.publicKey.toBase58());
  logger.info({ accounts: stored.length, programs: loadedPrograms, payer: payer.publicKey.toBase58() }, 'embedded chain restored');

  // One transaction at a time: LiteSVM is synchronous, but persisting is not. Each waits for a
  // turn of the event loop first, so a run of transactions never holds the loop for long.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(loopTurn, loopTurn).then(fn);
    queue = run.catch(() => undefined);
    return run;
  };
  const gate = options.writeGate ?? (<T>(write: () => Promise<T>) => write());
  const persist = (addresses: string[], signature?: ProcessedWrite['signature'], history?: ProcessedWrite['history']) => {
    const write: ProcessedWrite = { accounts: addresses.map((a) => ({ address: a, account: readStored(svm, a) })), signature, history };
    return gate(() => saveProcessed(db, write, clock.now()));
  };
  let lastSeq = await lastHistorySeq(db);
  // Wake-ups for the chain watcher: the accounts of each committed transaction (ChainHistory.onActivity).
  const activityListeners = new Set<(addresses: readonly string[]) => void>();
  const announce = (addresses: readonly string[]) => {
    for (const listener of activityListeners) {
      try {
        listener(addresses);
      } catch (error) {
        logger.warn({ err: error }, 'chain activity listener failed');
      }
    }
  };

  const airdropNow = async (pubkey: PublicKey, amount: bigint) => {
    svm.airdrop(address(pubkey.toBase58()), toLamports(amount));
    await persist([pubkey.toBase58()]);
  };
  const topUp = async () => {
    if (funding === false) return;
    const balance = balanceOf(svm, payerAddress) ?? 0n;
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

  /** Processes one transaction (inside the serial queue): execute, then commit accounts and history together. */
  const sendNow = async (bytes: Uint8Array): Promise<string> => {
    const tx = decodeTransaction(bytes);
    if ((await status(tx.signature)) !== null) return tx.signature; // already processed
    if (tx.nonceAccount !== undefined) {
      // A durable-nonce transaction lands while its account holds that nonce, at any height.
      if (!admitDurableNonce(svm, tx.nonceAccount, tx.blockhash)) {
        throw new TransientError('blockhash_expired', `nonce account ${tx.nonceAccount} does not hold the nonce ${tx.blockhash} (advanced or closed)`);
      }
    } else if (timeline.validHeightOf(tx.blockhash) === undefined) {
      throw new TransientError('blockhash_expired', `blockhash ${tx.blockhash} not found or expired`);
    }
    const time = timeline.now();
    syncClock(svm, time);
    const before = tx.writable.map((a) => readStored(svm, a));
    const balancesBefore = snapshotBalances(svm, tx.keys);
    const outcome = execute(svm, bytes);
    if (tx.nonceAccount !== undefined && (outcome.ok || outcome.executed)) renewNonce(svm, tx.nonceAccount, tx.signature);
    const failure = outcome.ok ? undefined : classifyTransactionFailure(outcome.text);
    if (outcome.ok || outcome.executed) {
      const err = outcome.ok ? null : (/err: (.*?), meta:/.exec(outcome.text)?.[1] ?? 'failed');
      const history = historyRecord({
        signature: tx.signature,
        seq: (lastSeq += 1),
        slot: time.slot,
        blockTime: time.unixTimestamp,
        bytes,
        keys: tx.keys,
        numSignatures: tx.numSignatures,
        before: balancesBefore,
        after: snapshotBalances(svm, tx.keys),
        execution: outcome,
        errText: err,
      });
      try {
        await persist(tx.writable, { signature: tx.signature, slot: time.slot, err }, history);
      } catch (error) {
        // Not durable means not landed: undo it in memory so the chain matches the database.
        tx.writable.forEach((a, i) => rollback(svm, a, before[i] ?? null));
        throw new TransientError('chain_persist_failed', `embedded chain could not persist ${tx.signature}`, { cause: error });
      }
      announce(tx.keys);
    }
    if (outcome.ok) {
      await topUp();
      return tx.signature;
    }
    if (failure === undefined) return tx.signature;
    throw failure;
  };

  const faucet = Keypair.fromSeed(createHmac('sha256', options.secretKey).update('embedded-chain-faucet').digest());
  const requestAirdropNow = async (pubkey: PublicKey, amount: bigint): Promise<string> => {
    // The faucet keeps at least 1 SOL after paying, so it always stays rent-exempt.
    const faucetAddress = address(faucet.publicKey.toBase58());
    const need = amount + 2n * BigInt(LAMPORTS_PER_SOL);
    const balance = svm.getBalance(faucetAddress) ?? 0n;
    if (balance < need) svm.airdrop(faucetAddress, toLamports(need - balance));
    const height = timeline.now().blockHeight;
    const transfer = new Transaction({ feePayer: faucet.publicKey, blockhash: timeline.blockhashAt(height), lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS });
    transfer.add(SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: pubkey, lamports: amount }));
    transfer.sign(faucet);
    return sendNow(transfer.serialize());
  };

  const history: EmbeddedBackend['history'] = {
    signaturesForAddress: (addr, opts) => signaturesForAddress(db, addr, opts),
    async getTransaction(signature) {
      const stored = await storedTransaction(db, signature);
      return stored ? toHistoryTransaction(signature, stored) : null;
    },
    balancesAt: (addr, signatures) => balancesAt(db, addr, signatures),
    getAccountInfo: async (pubkey) => readAccountInfo(svm, pubkey),
    getProgramAccounts: (programId, filters) => scanAccounts(db, programId, filters),
    onActivity(listener) {
      activityListeners.add(listener);
      return () => activityListeners.delete(listener);
    },
  };

  await serial(topUp);
  for (const hook of options.genesisHooks ?? []) await serial(() => applyGenesisHook(hook));

  // CHAIN_CLONE_FROM: what is still missing is fetched after the start, never holding it up; a
  // launch that needs a program asks again (fetchPrograms). Offline, one warning line.
  const stopCloning = new AbortController();
  const cloner: ProgramCloner | undefined = clone
    ? createProgramCloner({
        ...clone,
        logger,
        now: () => clock.now(),
        signal: stopCloning.signal,
        isLoaded: (programId) => loadedPrograms.includes(programId),
        load: (programId, path) =>
          serial(async () => {
            if (loadedPrograms.includes(programId)) return;
            const problem = programFileProblem(readFileSync(path));
            if (problem !== undefined) throw new ProgramFileError(path, programId, problem);
            svm.addProgramFromFile(address(programId), path);
            loadedPrograms.push(programId);
            for (const hook of options.genesisHooks ?? []) if (hook.programId.toBase58() === programId) await applyGenesisHook(hook);
          }),
      })
    : undefined;
  const background = cloner?.ensure();
  const unprovided = cloner ? [] : (options.expectedPrograms ?? []).filter((p) => !loadedPrograms.includes(p.programId));
  if (unprovided.length > 0) logger.warn(missingProgramsLine(unprovided));

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
      return serial(() => sendNow(bytes));
    },
    getSignatureStatus: status,
    async confirmTransaction(signature, lastValidBlockHeight, _commitment?: Commitment) {
      const found = await status(signature);
      if (found?.err) throw new NonRetriableError('program_error', `transaction ${signature} failed: ${String(found.err)}`);
      if (found) return;
      if (timeline.now().blockHeight > lastValidBlockHeight) {
        throw new TransientError('blockhash_expired', `transaction ${signature} expired before landing`);
      }
      throw new TransientError('transaction_not_found', `transaction ${signature} has not landed`);
    },
    async getAccountInfo(pubkey) {
      return readAccountInfo(svm, pubkey);
    },
    async getBalance(pubkey) {
      return Number(balanceOf(svm, pubkey.toBase58()) ?? 0n);
    },
    async getLamports(pubkey) {
      return balanceOf(svm, pubkey.toBase58()) ?? 0n;
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
        payerBalance: Number(balanceOf(svm, payerAddress) ?? 0n),
      };
    },
    history,
    airdrop: (pubkey, amount) => serial(() => airdropNow(pubkey, amount)),
    requestAirdrop: (pubkey, amount) => serial(() => requestAirdropNow(pubkey, amount)),
    async simulate(bytes, opts) {
      syncClock(svm, timeline.now());
      return simulate(svm, bytes, opts);
    },
    now: () => timeline.now(),
    genesisHash: timeline.blockhashAt(0),
    timelineOrigin: { genesisMs: genesis.genesisMs, chainId: genesis.chainId },
    transactionCount: () => lastSeq,
    async signatureInfo(signature) {
      const stored = await storedTransaction(db, signature);
      if (stored) return { slot: stored.slot, err: stored.meta.err ?? null };
      const row = await findSignature(db, signature);
      return row ? { slot: Number(row.slot), err: row.err } : null;
    },
    signatureInfos: (signatures) => signatureOutcomes(db, signatures),
    storedTransaction: (signature) => storedTransaction(db, signature),
    isBlockhashValid: (blockhash) => timeline.validHeightOf(blockhash) !== undefined,
    programAccounts: (programId, filters) => scanAccounts(db, programId, filters),
    applyGenesisHook: (hook) => serial(() => applyGenesisHook(hook)),
    async fetchPrograms(programIds) {
      if (!cloner) return undefined;
      const still = await cloner.ensure(programIds);
      return still.length > 0 ? cloner.failure() : undefined;
    },
    async close() {
      stopCloning.abort();
      await background;
      await queue;
    },
  };
  return backend;
}
