import { Keypair } from '@solana/web3.js';
import type { Logger } from '../../../lib/logger.js';
import type { Clock } from '../../../lib/clock.js';
import { TransientError } from '../../../lib/retry.js';
import type { ChainHistory } from '../../history.js';
import type { PendingTx, StepOutcome } from '../../steps/types.js';
import type { EmbeddedBackend } from '../backend.js';
import { createTimeline, BLOCKHASH_VALIDITY_BLOCKS } from '../timeline.js';
import { fromWireAccount, fromWireAccounts, fromWireError, type ChainMethod, type ChainThreadInfo, type FromChain, type ToChain, type WireAccount, type WireActivity, type WireStepInput } from './protocol.js';

/** The end of a `Worker` the client needs. */
export interface ClientPort {
  readonly threadId: number;
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
  payerSeed?: Uint8Array | undefined;
  budgetLamports?: bigint | undefined;
  signing?: WireStepInput['signing'];
  recordPending(label: string, tx: PendingTx): Promise<void>;
  logger: Logger;
}

/** The chain on its thread, as the main thread sees it. */
export interface ChainThread {
  /** Answers every `EmbeddedBackend` member: the synchronous ones here, the rest on the chain thread. */
  backend: EmbeddedBackend;
  /** Runs a launch step on the chain thread; its signed transactions are recorded here before they are sent. */
  runStep(input: ThreadStepInput): Promise<StepOutcome>;
  /** The worker running the chain now (undefined while one starts again): its thread id, or to end it. */
  current(): ClientPort | undefined;
}

const PINO_LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Restarts of a chain thread that stopped: 1 s after it stopped, doubling to 30 s while it keeps failing. */
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = 30_000;

/**
 * Starts a chain thread (`spawn`, `host.ts` on the other side) and connects to it; resolves once
 * the chain is up. A thread that stops later (an uncaught error, its exit) fails what it had in
 * flight with `TransientError('chain_unavailable')` — the runner retries those steps — and is
 * started again from the database, with a backoff while it keeps failing; meanwhile every call
 * fails the same way at once. The two connections to the service's file take turns through a
 * write lock in shared memory (db/writeLock.ts); `writeLock.reset` frees it when a thread ends
 * holding or wanting it.
 */
export function connectChainThread(
  spawn: () => ClientPort,
  deps: { clock: Clock; logger: Logger; writeLock?: { reset(): void }; startTimeoutMs?: number },
): Promise<ChainThread> {
  const logger = deps.logger.child({ component: 'chain', backend: 'embedded' });
  const startTimeoutMs = deps.startTimeoutMs ?? 60_000;
  let nextId = 0;
  const listeners = new Set<(addresses: readonly string[]) => void>();
  let transactionCount = 0;
  /** The thread answering now; undefined while one starts again. */
  let live: Link | undefined;
  let closing = false;
  let failures = 0;
  let restartTimer: NodeJS.Timeout | undefined;

  /** One thread: what it has in flight. */
  interface Link {
    port: ClientPort;
    calls: Map<number, { resolve(value: unknown): void; reject(error: Error): void; step?: ThreadStepInput; recordError?: unknown }>;
    stopped: boolean;
    /** Set by close(): the thread answered `closed`, or ended. */
    closeAnswered?: () => void;
  }

  const unavailable = (why: string, cause?: unknown) => new TransientError('chain_unavailable', `the chain thread is not running (${why})`, { cause });
  const request = (message: { t: 'call'; method: ChainMethod; args: unknown[] } | { t: 'step'; input: WireStepInput }, step?: ThreadStepInput) =>
    new Promise<unknown>((resolve, reject) => {
      const link = live;
      if (!link) return reject(unavailable(closing ? 'closed' : 'starting again'));
      const id = (nextId += 1);
      link.calls.set(id, { resolve, reject, step });
      link.port.postMessage({ ...message, id } as ToChain);
    });
  const call = (method: ChainMethod, ...args: unknown[]) => request({ t: 'call', method, args });

  /** Activity the chain thread reported, alone or with an answer (WireActivity): to the listeners. */
  const reportActivity = (activity: WireActivity) => {
    transactionCount = activity.count;
    for (const listener of listeners) {
      try {
        listener(activity.addresses);
      } catch (error) {
        logger.warn({ err: error }, 'chain activity listener failed');
      }
    }
  };

  /** Starts a thread; `ready` gets its info once the chain is up, `failed` why it did not come up. */
  function open(ready: (link: Link, info: ChainThreadInfo) => void, failedOnce: (error: Error) => void): void {
    // A start that fails is told once: its `failed` answer or start timeout, then its exit, each say so.
    let told = false;
    const failed = (error: Error) => {
      if (told) return;
      told = true;
      failedOnce(error);
    };
    const port = spawn();
    const link: Link = { port, calls: new Map(), stopped: false };
    let up = false;
    const post = (message: ToChain) => port.postMessage(message);
    const startTimer = setTimeout(() => {
      failed(new Error(`the chain thread did not start within ${startTimeoutMs} ms`));
      void port.terminate();
    }, startTimeoutMs);
    const stop = (error: Error) => {
      if (link.stopped) return;
      link.stopped = true;
      clearTimeout(startTimer);
      const reason = unavailable(error.message, error);
      for (const pending of link.calls.values()) pending.reject(reason);
      link.calls.clear();
      // It may have ended holding the write lock, or waiting for it.
      deps.writeLock?.reset();
      if (live === link) live = undefined;
      if (!up) return failed(error);
      if (closing) return link.closeAnswered?.();
      logger.error({ err: error }, 'chain thread stopped; starting it again');
      scheduleRestart();
    };
    port.on('error', (error) => stop(error));
    port.on('exit', (code) => stop(new Error(`the chain thread exited with code ${code}`)));
    port.on('message', (message) => {
      if ('activity' in message && message.activity) reportActivity(message.activity);
      switch (message.t) {
        case 'ready':
          clearTimeout(startTimer);
          up = true;
          transactionCount = message.info.transactionCount;
          ready(link, message.info);
          return;
        case 'failed':
          clearTimeout(startTimer);
          failed(fromWireError(message.error));
          void port.terminate();
          return;
        case 'result':
        case 'error': {
          const pending = link.calls.get(message.id);
          link.calls.delete(message.id);
          if (!pending) return;
          if (message.t === 'result') pending.resolve(message.value);
          // A step that failed because its transaction could not be recorded fails with that error
          // itself (a lost lease stays a LeaseLostError for the runner).
          else pending.reject(pending.recordError !== undefined ? (pending.recordError as Error) : fromWireError(message.error));
          return;
        }
        case 'record': {
          const pending = link.calls.get(message.step);
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
        case 'activity':
          reportActivity(message);
          return;
        case 'log':
          relayLog(deps.logger, message.line);
          return;
        case 'closed':
          link.closeAnswered?.();
          return;
      }
    });
  }

  function scheduleRestart(): void {
    const delay = Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** failures);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (closing) return;
      open(
        (link) => {
          failures = 0;
          live = link;
          logger.info('chain thread running again');
        },
        (error) => {
          failures += 1;
          logger.error({ err: error }, 'chain thread could not start again; trying later');
          scheduleRestart();
        },
      );
    }, delay);
    restartTimer.unref();
  }

  return new Promise<ChainThread>((resolveStart, rejectStart) => {
    open((link, info) => {
      live = link;
      resolveStart(build(info));
    }, rejectStart);
  });

  function build(info: ChainThreadInfo): ChainThread {
    // The timeline is a function of the wall clock and the genesis: the same here as on the chain thread.
    const timeline = createTimeline(deps.clock, info.timelineOrigin.genesisMs, info.timelineOrigin.chainId, info.floorHeight);
    const account = async (method: ChainMethod, ...args: unknown[]) => fromWireAccount((await call(method, ...args)) as WireAccount | null);
    const accounts = async (method: ChainMethod, ...args: unknown[]) => fromWireAccounts((await call(method, ...args)) as Array<{ pubkey: string; account: WireAccount }>);
    // The embedded chain's rent never changes (LiteSVM's default Rent, never set): each size's
    // minimum is asked of the thread once, not on every launch's quote (two round trips a create).
    const rentBySize = new Map<number, Promise<number>>();
    const rentExempt = (size: number): Promise<number> => {
      let known = rentBySize.get(size);
      if (!known) {
        // Sizes come from the code's account layouts (and a DAO name's length): a handful.
        if (rentBySize.size >= 1024) rentBySize.clear();
        known = call('getMinimumBalanceForRentExemption', size) as Promise<number>;
        rentBySize.set(size, known);
        known.catch(() => rentBySize.delete(size));
      }
      return known;
    };
    const history: EmbeddedBackend['history'] = {
      signaturesForAddress: (addr, options) => call('history.signaturesForAddress', addr, options) as ReturnType<ChainHistory['signaturesForAddress']>,
      getTransaction: (signature) => call('history.getTransaction', signature) as ReturnType<ChainHistory['getTransaction']>,
      balancesAt: (addr, signatures) => call('history.balancesAt', addr, signatures) as ReturnType<NonNullable<ChainHistory['balancesAt']>>,
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
      getLamports: (pubkey) => call('getLamports', pubkey.toBase58()) as Promise<bigint>,
      getMinimumBalanceForRentExemption: rentExempt,
      isProgramExecutable: (programId) => call('isProgramExecutable', programId.toBase58()) as Promise<boolean>,
      fetchPrograms: (programIds) => call('fetchPrograms', programIds) as ReturnType<NonNullable<EmbeddedBackend['fetchPrograms']>>,
      probe: () => call('probe') as ReturnType<EmbeddedBackend['probe']>,
      history,
      airdrop: async (pubkey, lamports) => void (await call('airdrop', pubkey.toBase58(), lamports)),
      requestAirdrop: (pubkey, lamports) => call('requestAirdrop', pubkey.toBase58(), lamports) as Promise<string>,
      simulate: (bytes, options) => call('simulate', bytes, options) as ReturnType<EmbeddedBackend['simulate']>,
      signatureInfo: (signature) => call('signatureInfo', signature) as ReturnType<EmbeddedBackend['signatureInfo']>,
      signatureInfos: (signatures) => call('signatureInfos', signatures) as ReturnType<EmbeddedBackend['signatureInfos']>,
      storedTransaction: async (signature) => {
        const stored = (await call('storedTransaction', signature)) as Awaited<ReturnType<EmbeddedBackend['storedTransaction']>>;
        return stored ? { ...stored, bytes: Buffer.from(stored.bytes) } : stored;
      },
      programAccounts: (programId, filters) => accounts('programAccounts', programId.toBase58(), filters),
      applyGenesisHook: () => Promise.reject(new Error('genesis hooks are applied when the chain thread starts')),
      async close() {
        closing = true;
        clearTimeout(restartTimer);
        const link = live;
        if (!link) return;
        // The thread answers `closed` once its chain and connection are closed; a thread that does not
        // within 10 s is ended anyway.
        const done = new Promise<void>((resolve) => (link.closeAnswered = resolve));
        link.port.postMessage({ t: 'close' });
        const timer = setTimeout(() => void link.port.terminate(), 10_000);
        await done;
        clearTimeout(timer);
        await link.port.terminate();
      },
    };
    const runStep = async (input: ThreadStepInput) =>
      (await request(
        {
          t: 'step',
          input: {
            launchId: input.launchId,
            step: input.step,
            request: input.request,
            results: input.results,
            pending: input.pending,
            payerSeed: input.payerSeed,
            budgetLamports: input.budgetLamports,
            signing: input.signing,
            // The bindings the thread's lines of this step carry; a step logger that writes nothing
            // (LOG_LEVEL=silent) sends none (pino parses them anew on each call).
            logBindings: input.logger.isLevelEnabled('fatal') ? input.logger.bindings() : {},
          },
        },
        input,
      )) as StepOutcome;
    return { backend, runStep, current: () => live?.port };
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
