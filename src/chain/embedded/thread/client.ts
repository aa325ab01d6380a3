import { Keypair } from '@solana/web3.js';
import type { Logger } from '../../../lib/logger.js';
import type { Clock } from '../../../lib/clock.js';
import { TransientError } from '../../../lib/retry.js';
import type { ChainHistory } from '../../history.js';
import type { PendingTx, StepOutcome } from '../../steps/types.js';
import type { EmbeddedBackend } from '../backend.js';
import { createTimeline, BLOCKHASH_VALIDITY_BLOCKS } from '../timeline.js';
import { fromWireAccount, fromWireAccounts, fromWireError, type ChainMethod, type ChainThreadInfo, type FromChain, type ToChain, type WireAccount, type WireStepInput } from './protocol.js';

/** The end of a `Worker` the client needs. */
export interface ClientPort {
  postMessage(message: ToChain): void;
  on(event: 'message', listener: (message: FromChain) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'exit', listener: (code: number) => void): unknown;
  terminate(): Promise<number>;
}

/** A launch step for the chain thread (the runner's `StepRunInput`; the port is declared in `launches/`). */
export interface ThreadStepInput {
  launchId: string;
  step: string;
  request: Record<string, unknown>;
  results: Record<string, unknown>;
  pending: Record<string, PendingTx>;
  recordPending(label: string, tx: PendingTx): Promise<void>;
  logger: Logger;
}

/** The chain on its thread, as the main thread sees it. */
export interface ChainThread {
  /** Answers every `EmbeddedBackend` member: the synchronous ones here, the rest on the chain thread. */
  backend: EmbeddedBackend;
  /** Runs a launch step on the chain thread; its signed transactions are recorded here before they are sent. */
  runStep(input: ThreadStepInput): Promise<StepOutcome>;
}

const PINO_LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/**
 * Connects to a chain thread (`host.ts` on the other side); resolves once the chain is up.
 * `pauseDatabase` holds the main thread's connection idle while the chain thread commits to the
 * same file (its `lock`), so the event loop never sleeps in SQLite's busy handler on its write lock.
 */
export function connectChainThread(
  port: ClientPort,
  deps: { clock: Clock; logger: Logger; pauseDatabase: (during: () => Promise<void>) => Promise<void>; startTimeoutMs?: number },
): Promise<ChainThread> {
  const logger = deps.logger.child({ component: 'chain', backend: 'embedded' });
  let nextId = 0;
  const calls = new Map<number, { resolve(value: unknown): void; reject(error: Error): void; step?: ThreadStepInput; recordError?: unknown }>();
  const listeners = new Set<(addresses: readonly string[]) => void>();
  /** Holds of the main thread's connection the chain thread asked for, by id: each resolves its hold. */
  const locks = new Map<number, () => void>();
  let transactionCount = 0;
  let down: Error | undefined;
  let closed: (() => void) | undefined;

  const post = (message: ToChain) => port.postMessage(message);
  const request = (message: { t: 'call'; method: ChainMethod; args: unknown[] } | { t: 'step'; input: WireStepInput }, step?: ThreadStepInput) =>
    new Promise<unknown>((resolve, reject) => {
      if (down) return reject(down);
      const id = (nextId += 1);
      calls.set(id, { resolve, reject, step });
      post({ ...message, id } as ToChain);
    });
  const call = (method: ChainMethod, ...args: unknown[]) => request({ t: 'call', method, args });

  const fail = (error: Error) => {
    if (down) return;
    down = new TransientError('chain_unavailable', `the chain thread stopped: ${error.message}`, { cause: error });
    for (const pending of calls.values()) pending.reject(down);
    calls.clear();
    for (const release of locks.values()) release();
    locks.clear();
  };

  return new Promise<ChainThread>((resolveStart, rejectStart) => {
    const startTimer = setTimeout(() => {
      rejectStart(new Error(`the chain thread did not start within ${deps.startTimeoutMs ?? 60_000} ms`));
      void port.terminate();
    }, deps.startTimeoutMs ?? 60_000);

    port.on('error', (error) => {
      logger.error({ err: error }, 'chain thread failed');
      fail(error);
      clearTimeout(startTimer);
      rejectStart(error);
    });
    port.on('exit', (code) => {
      fail(new Error(`exited with code ${code}`));
      clearTimeout(startTimer);
      rejectStart(new Error(`the chain thread exited with code ${code} before it was ready`));
      closed?.();
    });
    port.on('message', (message) => {
      switch (message.t) {
        case 'ready':
          clearTimeout(startTimer);
          transactionCount = message.info.transactionCount;
          resolveStart(build(message.info));
          return;
        case 'failed':
          clearTimeout(startTimer);
          rejectStart(fromWireError(message.error));
          void port.terminate();
          return;
        case 'result':
        case 'error': {
          const pending = calls.get(message.id);
          calls.delete(message.id);
          if (!pending) return;
          if (message.t === 'result') pending.resolve(message.value);
          // A step that failed because its transaction could not be recorded fails with that error
          // itself (a lost lease stays a LeaseLostError for the runner).
          else pending.reject(pending.recordError !== undefined ? (pending.recordError as Error) : fromWireError(message.error));
          return;
        }
        case 'record': {
          const pending = calls.get(message.step);
          if (!pending?.step) return post({ t: 'recorded', id: message.id, error: { name: 'Error', message: 'no such step' } });
          pending.step.recordPending(message.label, message.tx as PendingTx).then(
            () => post({ t: 'recorded', id: message.id }),
            (error: unknown) => {
              pending.recordError = error;
              post({ t: 'recorded', id: message.id, error: { name: 'Error', message: error instanceof Error ? error.message : String(error) } });
            },
          );
          return;
        }
        case 'lock': {
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          locks.set(message.id, release);
          deps
            .pauseDatabase(async () => {
              post({ t: 'locked', id: message.id });
              await released;
            })
            .catch((error: unknown) => {
              // The database is closing: the chain thread's commit goes on (or fails) by itself.
              logger.warn({ err: error }, 'could not hold the database for the chain thread');
              post({ t: 'locked', id: message.id });
            });
          return;
        }
        case 'unlock':
          locks.get(message.id)?.();
          locks.delete(message.id);
          return;
        case 'activity':
          transactionCount = message.count;
          for (const listener of listeners) {
            try {
              listener(message.addresses);
            } catch (error) {
              logger.warn({ err: error }, 'chain activity listener failed');
            }
          }
          return;
        case 'log':
          relayLog(deps.logger, message.line);
          return;
        case 'closed':
          closed?.();
          return;
      }
    });
  });

  function build(info: ChainThreadInfo): ChainThread {
    // The timeline is a function of the wall clock and the genesis: the same here as on the chain thread.
    const timeline = createTimeline(deps.clock, info.timelineOrigin.genesisMs, info.timelineOrigin.chainId, info.floorHeight);
    const account = async (method: ChainMethod, ...args: unknown[]) => fromWireAccount((await call(method, ...args)) as WireAccount | null);
    const accounts = async (method: ChainMethod, ...args: unknown[]) => fromWireAccounts((await call(method, ...args)) as Array<{ pubkey: string; account: WireAccount }>);
    const history: ChainHistory = {
      signaturesForAddress: (addr, options) => call('history.signaturesForAddress', addr, options) as ReturnType<ChainHistory['signaturesForAddress']>,
      getTransaction: (signature) => call('history.getTransaction', signature) as ReturnType<ChainHistory['getTransaction']>,
      getAccountInfo: (pubkey) => account('getAccountInfo', pubkey.toBase58()),
      getProgramAccounts: (programId, filters) => accounts('history.getProgramAccounts', programId.toBase58(), filters),
      onActivity(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const backend: EmbeddedBackend = {
      kind: 'embedded',
      payer: Keypair.fromSecretKey(info.payerSecretKey),
      fees: { priorityFeeMicroLamports: 0, computeUnitLimit: undefined },
      loadedPrograms: info.loadedPrograms,
      genesisHash: info.genesisHash,
      timelineOrigin: info.timelineOrigin,
      async getLatestBlockhash() {
        const height = timeline.now().blockHeight;
        return { blockhash: timeline.blockhashAt(height), lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS };
      },
      async getBlockHeight() {
        return timeline.now().blockHeight;
      },
      now: () => timeline.now(),
      isBlockhashValid: (blockhash) => timeline.validHeightOf(blockhash) !== undefined,
      transactionCount: () => transactionCount,
      sendRawTransaction: (bytes) => call('sendRawTransaction', bytes) as Promise<string>,
      getSignatureStatus: (signature) => call('getSignatureStatus', signature) as ReturnType<EmbeddedBackend['getSignatureStatus']>,
      confirmTransaction: async (signature, lastValidBlockHeight, commitment) => void (await call('confirmTransaction', signature, lastValidBlockHeight, commitment)),
      getAccountInfo: (pubkey, commitment) => account('getAccountInfo', pubkey.toBase58(), commitment),
      getBalance: (pubkey) => call('getBalance', pubkey.toBase58()) as Promise<number>,
      getMinimumBalanceForRentExemption: (size) => call('getMinimumBalanceForRentExemption', size) as Promise<number>,
      isProgramExecutable: (programId) => call('isProgramExecutable', programId.toBase58()) as Promise<boolean>,
      probe: () => call('probe') as ReturnType<EmbeddedBackend['probe']>,
      history,
      airdrop: async (pubkey, lamports) => void (await call('airdrop', pubkey.toBase58(), lamports)),
      requestAirdrop: (pubkey, lamports) => call('requestAirdrop', pubkey.toBase58(), lamports) as Promise<string>,
      simulate: (bytes, options) => call('simulate', bytes, options) as ReturnType<EmbeddedBackend['simulate']>,
      signatureInfo: (signature) => call('signatureInfo', signature) as ReturnType<EmbeddedBackend['signatureInfo']>,
      storedTransaction: async (signature) => {
        const stored = (await call('storedTransaction', signature)) as Awaited<ReturnType<EmbeddedBackend['storedTransaction']>>;
        return stored ? { ...stored, bytes: Buffer.from(stored.bytes) } : stored;
      },
      programAccounts: (programId, filters) => accounts('programAccounts', programId.toBase58(), filters),
      applyGenesisHook: () => Promise.reject(new Error('genesis hooks are applied when the chain thread starts')),
      async close() {
        if (down) return;
        const done = new Promise<void>((resolve) => (closed = resolve));
        post({ t: 'close' });
        const timer = setTimeout(() => void port.terminate(), 10_000);
        await done;
        clearTimeout(timer);
        await port.terminate();
      },
    };
    const runStep = async (input: ThreadStepInput) =>
      (await request(
        { t: 'step', input: { launchId: input.launchId, step: input.step, request: input.request, results: input.results, pending: input.pending, logBindings: input.logger.bindings() } },
        input,
      )) as StepOutcome;
    return { backend, runStep };
  }
}

/** Writes a chain-thread log line through the main thread's logger (its level, redaction and format). */
function relayLog(logger: Logger, line: string): void {
  try {
    const { level, msg, time: _time, pid: _pid, hostname: _hostname, ...rest } = JSON.parse(line) as { level: number; msg?: string; time?: unknown; pid?: unknown; hostname?: unknown };
    logger[PINO_LEVELS[level] ?? 'info']({ thread: 'chain', ...rest }, msg ?? '');
  } catch {
    logger.info({ thread: 'chain' }, line.trim());
  }
}
