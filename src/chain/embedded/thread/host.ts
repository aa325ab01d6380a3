import { PublicKey } from '@solana/web3.js';
import type { AccountFilter } from '../../history.js';
import type { Commitment } from '../../backend.js';
import type { StepOutcome } from '../../steps/types.js';
import type { EmbeddedBackend } from '../backend.js';
import { toWireAccount, toWireAccounts, toWireError, type ChainMethod, type ChainThreadInfo, type FromChain, type ToChain, type WireActivity, type WireStepInput } from './protocol.js';

/** The end of a `MessagePort` (or `parentPort`) the host needs. */
export interface HostPort {
  postMessage(message: FromChain): void;
  on(event: 'message', listener: (message: ToChain) => void): unknown;
}

/** Runs one launch step in the chain thread; `recordPending` asks the main thread to persist a transaction. */
export type ThreadStepRunner = (input: WireStepInput, recordPending: (label: string, tx: unknown) => Promise<void>) => Promise<StepOutcome>;

/**
 * The chain thread's side (see `client.ts` for the main thread's): answers backend calls and runs
 * launch steps on the embedded chain it owns. (The chain's commits take the write lock the main
 * thread's connection shares with this thread's, db/writeLock.ts, without a message.)
 */
export class ChainThreadHost {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve(): void; reject(error: Error): void }>();
  private backend: EmbeddedBackend | undefined;
  private runStep: ThreadStepRunner | undefined;
  private onClose: (() => Promise<void>) | undefined;
  /** Accounts of transactions committed since the last report, sent with the next message (see WireActivity). */
  private activity: Set<string> | undefined;
  private activityFlush: NodeJS.Immediate | undefined;

  constructor(private readonly port: HostPort) {
    port.on('message', (message) => this.receive(message));
  }

  /** Forwards a log line (pino's JSON) to the main thread's logger. */
  log(line: string): void {
    this.port.postMessage({ t: 'log', line });
  }

  failed(error: unknown): void {
    this.port.postMessage({ t: 'failed', error: toWireError(error) });
  }

  /** The chain is up: answers calls from now on and tells the main thread what it needs at once. */
  serve(backend: EmbeddedBackend, deps: { runStep: ThreadStepRunner; info: Omit<ChainThreadInfo, 'transactionCount'>; close(): Promise<void> }): void {
    this.backend = backend;
    this.runStep = deps.runStep;
    this.onClose = deps.close;
    backend.history.onActivity?.((addresses) => {
      this.activity ??= new Set();
      for (const address of addresses) this.activity.add(address);
      // Nothing else went out by the end of this turn: it goes alone.
      this.activityFlush ??= setImmediate(() => {
        this.activityFlush = undefined;
        const activity = this.takeActivity();
        if (activity) this.port.postMessage({ t: 'activity', ...activity });
      });
    });
    this.port.postMessage({ t: 'ready', info: { ...deps.info, transactionCount: backend.transactionCount() } });
  }

  /** The activity not yet reported, now taken to go out with a message. */
  private takeActivity(): WireActivity | undefined {
    const addresses = this.activity;
    if (!addresses || !this.backend) return undefined;
    this.activity = undefined;
    if (this.activityFlush) clearImmediate(this.activityFlush);
    this.activityFlush = undefined;
    return { addresses: [...addresses], count: this.backend.transactionCount() };
  }

  /** An answer or a record, with the activity not yet reported (before it, as if sent first). */
  private send(message: Extract<FromChain, { t: 'result' | 'error' | 'record' }>): void {
    const activity = this.takeActivity();
    this.port.postMessage(activity ? { ...message, activity } : message);
  }

  private receive(message: ToChain): void {
    switch (message.t) {
      case 'recorded': {
        const waiter = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        if (message.t === 'recorded' && message.error) waiter?.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
        else waiter?.resolve();
        return;
      }
      case 'call':
        return this.answer(message.id, () => this.call(message.method, message.args));
      case 'step':
        return this.answer(message.id, () => this.step(message.id, message.input));
      case 'close':
        void (async () => {
          try {
            await this.onClose?.();
          } finally {
            this.port.postMessage({ t: 'closed' });
          }
        })();
        return;
    }
  }

  private answer(id: number, run: () => Promise<unknown>): void {
    run().then(
      (value) => this.send({ t: 'result', id, value }),
      (error: unknown) => this.send({ t: 'error', id, error: toWireError(error) }),
    );
  }

  private step(stepId: number, input: WireStepInput): Promise<StepOutcome> {
    if (!this.runStep) throw new Error('chain thread not ready');
    const recordPending = (label: string, tx: unknown) =>
      new Promise<void>((resolve, reject) => {
        const id = (this.nextId += 1);
        this.waiting.set(id, { resolve, reject });
        this.send({ t: 'record', id, step: stepId, label, tx });
      });
    return this.runStep(input, recordPending);
  }

  private async call(method: ChainMethod, args: unknown[]): Promise<unknown> {
    const chain = this.backend;
    if (!chain) throw new Error('chain thread not ready');
    const key = (i: number) => new PublicKey(args[i] as string);
    switch (method) {
      case 'getLatestBlockhash':
        return chain.getLatestBlockhash();
      case 'getBlockHeight':
        return chain.getBlockHeight();
      case 'sendRawTransaction':
        return chain.sendRawTransaction(args[0] as Uint8Array);
      case 'getSignatureStatus':
        return chain.getSignatureStatus(args[0] as string);
      case 'confirmTransaction':
        return chain.confirmTransaction(args[0] as string, args[1] as number, args[2] as Commitment | undefined);
      case 'getAccountInfo':
        return toWireAccount(await chain.getAccountInfo(key(0), args[1] as Commitment | undefined));
      case 'getBalance':
        return chain.getBalance(key(0));
      case 'getLamports':
        return chain.getLamports(key(0));
      case 'getMinimumBalanceForRentExemption':
        return chain.getMinimumBalanceForRentExemption(args[0] as number);
      case 'isProgramExecutable':
        return chain.isProgramExecutable(key(0));
      case 'fetchPrograms':
        return chain.fetchPrograms?.(args[0] as string[]);
      case 'probe':
        return chain.probe();
      case 'airdrop':
        return chain.airdrop(key(0), args[1] as bigint);
      case 'requestAirdrop':
        return chain.requestAirdrop(key(0), args[1] as bigint);
      case 'simulate':
        return chain.simulate(args[0] as Uint8Array, args[1] as { sigVerify: boolean });
      case 'signatureInfo':
        return chain.signatureInfo(args[0] as string);
      case 'signatureInfos':
        return chain.signatureInfos(args[0] as string[]);
      case 'storedTransaction':
        return chain.storedTransaction(args[0] as string);
      case 'programAccounts':
        return toWireAccounts(await chain.programAccounts(key(0), args[1] as AccountFilter[]));
      case 'history.signaturesForAddress':
        return chain.history.signaturesForAddress(args[0] as string, args[1] as { until?: string; before?: string; limit: number });
      case 'history.getTransaction':
        return chain.history.getTransaction(args[0] as string);
      case 'history.balancesAt':
        return chain.history.balancesAt(args[0] as string, args[1] as string[]);
      case 'history.getProgramAccounts':
        return toWireAccounts(await chain.history.getProgramAccounts(key(0), args[1] as AccountFilter[]));
    }
  }
}
