import { STATUS_CODES } from 'node:http';
import { Connection, SYSVAR_CLOCK_PUBKEY, SendTransactionError, VersionedTransaction, type FetchFn, type Keypair } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import type { ChainBackend, Commitment, FeeSettings, SignatureStatus } from '../backend.js';
import { classifyTransactionFailure, RpcHttpError } from '../errors.js';
import { parseRetryAfter } from '../../lib/retryAfter.js';
import { createRpcBreaker, type RpcBreakerOptions } from './breaker.js';
import { createRpcHistory } from './history.js';

/** Options of {@link createRpcBackend}. */
export interface RpcBackendOptions {
  rpcUrl: string;
  payer: Keypair;
  fees: FeeSettings;
  clock: Clock;
  logger: Logger;
  /** Per-request timeout (default 10 s). */
  requestTimeoutMs?: number;
  /** Signature-status poll interval while confirming (default 500 ms). */
  pollIntervalMs?: number;
  /** Longest a confirmation may wait before it is a transient failure (default 90 s). */
  confirmTimeoutMs?: number;
  breaker?: RpcBreakerOptions;
}

const RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };

/**
 * Any Solana cluster through web3.js `Connection`, behind its own circuit breaker. Confirmation
 * polls signature statuses (no websocket) until the commitment is reached or the blockhash expires.
 */
export function createRpcBackend(options: RpcBackendOptions): ChainBackend {
  const logger = options.logger.child({ component: 'chain', backend: 'rpc' });
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  const pollMs = options.pollIntervalMs ?? 500;
  const breaker = createRpcBreaker(options.breaker);
  const timedFetch = (async (input: string, init?: RequestInit) => {
    const res = await fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    // web3.js words a 429 or 503 without its headers: a Retry-After must be kept here.
    const retryAfterMs = res.status === 429 || res.status === 503 ? parseRetryAfter(res.headers.get('retry-after') ?? undefined, Date.now()) : undefined;
    if (retryAfterMs === undefined) return res;
    await res.body?.cancel();
    throw new RpcHttpError(res.status, res.statusText || (STATUS_CODES[res.status] ?? ''), retryAfterMs);
  }) as unknown as FetchFn;
  const connection = new Connection(options.rpcUrl, { commitment: 'confirmed', disableRetryOnRateLimit: true, fetch: timedFetch });
  const call = breaker.call;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const getSignatureStatus = async (signature: string): Promise<SignatureStatus | null> => {
    const { value } = await call(() => connection.getSignatureStatuses([signature], { searchTransactionHistory: true }));
    const status = value[0];
    if (!status) return null;
    return { status: status.confirmationStatus ?? 'processed', err: status.err };
  };

  const getBlockHeight = () => call(() => connection.getBlockHeight('confirmed'));

  return {
    kind: 'rpc',
    payer: options.payer,
    fees: options.fees,
    getLatestBlockhash: () => call(() => connection.getLatestBlockhash('confirmed')),
    getBlockHeight,
    sendRawTransaction: (bytes) =>
      call(async () => {
        try {
          return await connection.sendRawTransaction(bytes, { preflightCommitment: 'confirmed' });
        } catch (error) {
          if (!(error instanceof SendTransactionError)) throw error;
          const text = `${error.message}\n${(error.transactionError.logs ?? []).join('\n')}`;
          const failure = classifyTransactionFailure(text, error);
          if (failure) throw failure;
          const first = VersionedTransaction.deserialize(bytes).signatures[0];
          return bs58.encode(first ?? new Uint8Array(64));
        }
      }),
    getSignatureStatus,
    async confirmTransaction(signature, lastValidBlockHeight, commitment = 'confirmed') {
      const deadline = options.clock.now() + (options.confirmTimeoutMs ?? 90_000);
      for (;;) {
        const status = await getSignatureStatus(signature);
        if (status?.err) throw new NonRetriableError('program_error', `transaction ${signature} failed: ${JSON.stringify(status.err)}`);
        if (status && RANK[status.status] >= RANK[commitment]) return;
        if (!status && (await getBlockHeight()) > lastValidBlockHeight) {
          // One last look: it may have landed in the final valid block.
          if (await getSignatureStatus(signature)) continue;
          throw new TransientError('blockhash_expired', `transaction ${signature} expired before landing`);
        }
        if (options.clock.now() > deadline) {
          throw new TransientError('confirm_timeout', `transaction ${signature} not ${commitment} in time`);
        }
        await sleep(pollMs);
      }
    },
    getAccountInfo: (pubkey, commitment) => call(() => connection.getAccountInfo(pubkey, commitment ?? 'confirmed')),
    getBalance: (pubkey) => call(() => connection.getBalance(pubkey, 'confirmed')),
    requestAirdrop: (pubkey, lamports) => call(() => connection.requestAirdrop(pubkey, Number(lamports))),
    getMinimumBalanceForRentExemption: (size) => call(() => connection.getMinimumBalanceForRentExemption(size)),
    async isProgramExecutable(programId) {
      const info = await call(() => connection.getAccountInfo(programId, 'confirmed'));
      return info?.executable === true;
    },
    async probe() {
      const [clockAccount, payerAccount] = await call(() =>
        connection.getMultipleAccountsInfo([SYSVAR_CLOCK_PUBKEY, options.payer.publicKey], 'confirmed'),
      );
      if (!clockAccount) throw new TransientError('rpc_error', 'RPC returned no clock sysvar');
      return {
        slot: Number(clockAccount.data.readBigUInt64LE(0)),
        unixTimestamp: Number(clockAccount.data.readBigInt64LE(32)),
        payerBalance: payerAccount?.lamports ?? 0,
      };
    },
    history: createRpcHistory(connection, breaker),
    breakerState: () => breaker.state(),
    async close() {
      breaker.shutdown();
      logger.debug('rpc backend closed');
    },
  };
}
