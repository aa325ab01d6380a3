import { SYSVAR_CLOCK_PUBKEY, SendTransactionError, VersionedTransaction, type Keypair, type Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import type { ChainBackend, ChainProbe, Commitment, ConfirmOptions, EndpointHealth, FeeSettings, SignatureStatus } from '../backend.js';
import { classifyTransactionFailure } from '../errors.js';
import { DEFAULT_COMPUTE_UNITS } from '../transaction.js';
import { percentile } from '../../lib/percentile.js';
import type { RpcBreakerOptions } from './breaker.js';
import { createEndpointPool } from './endpoints.js';
import { createRpcHistory } from './history.js';

/** Options of {@link createRpcBackend}. */
export interface RpcBackendOptions {
  /** The endpoints, primary first (SOLANA_RPC_URL, comma-separated). */
  rpcUrls: readonly string[];
  payer: Keypair;
  fees: FeeSettings;
  clock: Clock;
  logger: Logger;
  /** Timeout of a slow request: a send, a simulation, a history page (default 10 s). */
  requestTimeoutMs?: number;
  /** Timeout of every other request, a short read (default 2 s). */
  readTimeoutMs?: number;
  /** A short read unanswered this long is sent again beside the first (default 500 ms; 0: off). */
  readHedgeMs?: number;
  /** First signature-status poll interval while confirming (default 500 ms); grows by half each poll up to 2 s. */
  pollIntervalMs?: number;
  /** How often the same signed bytes are sent again while a transaction is not seen (default 2 s). */
  rebroadcastIntervalMs?: number;
  /**
   * While a send is unanswered, how often its signature's status is read (default 1 s): a send whose
   * answer is lost is known to have gone through from its status, not after the send timeout.
   */
  sendCheckIntervalMs?: number;
  /** Longest a confirmation may wait before it is a transient failure (default 90 s). */
  confirmTimeoutMs?: number;
  breaker?: RpcBreakerOptions;
  /** Tries of a read, or of a send of the same bytes, across the endpoints before its failure surfaces (default 3). */
  readTries?: number;
}

const RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };

/** The transaction's first signature, its id: known before it is sent. */
function signatureOf(bytes: Uint8Array): string {
  const first = VersionedTransaction.deserialize(bytes).signatures[0];
  return bs58.encode(first ?? new Uint8Array(64));
}

/**
 * Any Solana cluster through web3.js `Connection`, over one or more endpoints (docs/chain.md): reads
 * fail over, sends go to every endpoint whose breaker is not open, each endpoint has its own breaker.
 * Sending is a production sender's: the provider's own retries off (`maxRetries: 0`), the same signed
 * bytes sent again every ~2 s while the signature is not seen, until it is or its blockhash expires;
 * confirmation polls signature statuses (no websocket) with a growing interval.
 */
export function createRpcBackend(options: RpcBackendOptions): ChainBackend {
  const logger = options.logger.child({ component: 'chain', backend: 'rpc' });
  const firstPollMs = options.pollIntervalMs ?? 500;
  const rebroadcastMs = options.rebroadcastIntervalMs ?? 2000;
  const sendTries = options.readTries ?? 3;
  const sendCheckMs = options.sendCheckIntervalMs ?? 1000;
  const pool = createEndpointPool(options.rpcUrls, { requestTimeoutMs: options.requestTimeoutMs, readTimeoutMs: options.readTimeoutMs, readHedgeMs: options.readHedgeMs, breaker: options.breaker, readTries: options.readTries });
  const read = pool.read;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const lastProbe = new Map<string, EndpointHealth>();

  const getSignatureStatus = async (signature: string): Promise<SignatureStatus | null> => {
    const { value } = await read((c) => c.getSignatureStatuses([signature], { searchTransactionHistory: true }));
    const status = value[0];
    if (!status) return null;
    return { status: status.confirmationStatus ?? 'processed', err: status.err };
  };

  const getBlockHeight = () => read((c) => c.getBlockHeight('confirmed'));

  /** Sends to every endpoint not open. `preflight`: the first send simulates; a rebroadcast of bytes already sent does not. */
  const sendOnce = (bytes: Uint8Array, preflight: boolean) =>
    pool.broadcast(async (connection) => {
      try {
        return await connection.sendRawTransaction(bytes, { skipPreflight: !preflight, preflightCommitment: 'confirmed', maxRetries: 0 });
      } catch (error) {
        if (!(error instanceof SendTransactionError)) throw error;
        const text = `${error.message}\n${(error.transactionError.logs ?? []).join('\n')}`;
        const failure = classifyTransactionFailure(text, error);
        if (failure) throw failure;
        return signatureOf(bytes);
      }
    });

  /**
   * The same signed bytes are safe to send again (one signature; "already processed" counts as
   * sent), so a transport fault on every endpoint (a 503, a lost answer, a short 429) is tried again
   * here, as a read is, instead of failing the step into its backoff.
   */
  const sendWithTries = async (bytes: Uint8Array, preflight: boolean): Promise<string> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await sendOnce(bytes, preflight);
      } catch (error) {
        const again = error instanceof TransientError && error.code !== 'blockhash_expired' && error.code !== 'breaker_open' && (error.retryAfterMs ?? 0) <= 2000;
        if (!again || attempt >= sendTries) throw error;
        if (error.code !== 'rpc_timeout' && error.code !== 'rpc_rate_limited') await sleep(250 * attempt);
      }
    }
  };

  /**
   * A send that does not wait out a lost answer (docs/chain.md). The signature is known before
   * sending, so while no send has answered, its status is read every `sendCheckMs`: seen (landed,
   * or executed and failed, which the confirmation reports) means the bytes went through, and the
   * send is done. From `rebroadcastMs` on without an answer or a status, the same bytes go out again
   * beside the first (with the same preflight: a transaction already processed is answered as
   * sent); the first answer wins. A send still unanswered runs on to its own timeout unheard.
   */
  const send = (bytes: Uint8Array, preflight: boolean): Promise<string> => {
    const signature = signatureOf(bytes);
    return new Promise<string>((resolve, reject) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      let sentAt = options.clock.now();
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        settle();
      };
      const check = async () => {
        // A status read that fails is unknown this time: asked again at the next check.
        const status = await getSignatureStatus(signature).catch(() => undefined);
        if (done) return;
        if (status) {
          logger.debug({ signature }, 'send unanswered, but its transaction is seen');
          return finish(() => resolve(signature));
        }
        if (options.clock.now() - sentAt >= rebroadcastMs) {
          sentAt = options.clock.now();
          logger.debug({ signature }, 'send unanswered and its transaction not seen; the same bytes again');
          sendOnce(bytes, preflight).then(
            (answered) => finish(() => resolve(answered)),
            (error: unknown) => logger.debug({ signature, err: error }, 'a second send of unanswered bytes failed'),
          );
        }
        timer = setTimeout(() => void check(), sendCheckMs);
      };
      timer = setTimeout(() => void check(), sendCheckMs);
      sendWithTries(bytes, preflight).then(
        (answered) => finish(() => resolve(answered)),
        (error: unknown) => finish(() => reject(error)),
      );
    });
  };

  /** A read during confirmation whose transport failed: unknown this time, asked again at the next poll. */
  const orUnknown = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (error) {
      // With every endpoint's breaker open the step waits; the resume finds the recorded transaction.
      if (error instanceof NonRetriableError || (error instanceof TransientError && error.code === 'breaker_open')) throw error;
      return undefined;
    }
  };

  /**
   * PRIORITY_FEE_MAX_MICROLAMPORTS: the 75th percentile of the recent prioritization fees over the
   * accounts the transaction writes, capped; the unit limit the simulation consumed plus 10 % and
   * 1 000 units, never above what estimates assumed. A signal that cannot be read leaves the
   * configured value (the send's preflight reports a transaction that cannot run).
   */
  const networkBudget = async (tx: Transaction): Promise<FeeSettings> => {
    const fees = options.fees;
    const cap = fees.priorityFeeMaxMicroLamports ?? fees.priorityFeeMicroLamports;
    const message = tx.compileMessage();
    const writable = message.accountKeys.filter((_, i) => message.isAccountWritable(i));
    let price = Math.min(cap, fees.priorityFeeMicroLamports);
    let limit = fees.computeUnitLimit;
    const [recent, simulated] = await Promise.allSettled([
      read((c) => c.getRecentPrioritizationFees({ lockedWritableAccounts: writable })),
      read((c) => c.simulateTransaction(new VersionedTransaction(message), { sigVerify: false, replaceRecentBlockhash: true, commitment: 'confirmed' })),
    ]);
    if (recent.status === 'fulfilled') price = Math.min(cap, percentile(recent.value.map((r) => r.prioritizationFee).sort((a, b) => a - b), 75) ?? 0);
    const units = simulated.status === 'fulfilled' && !simulated.value.value.err ? simulated.value.value.unitsConsumed : undefined;
    if (units !== undefined && units > 0) limit = Math.min(fees.computeUnitLimit ?? DEFAULT_COMPUTE_UNITS, Math.ceil(units * 1.1) + 1000);
    return { ...fees, priorityFeeMicroLamports: price, computeUnitLimit: limit };
  };

  return {
    kind: 'rpc',
    ...(options.fees.priorityFeeMaxMicroLamports !== undefined ? { networkBudget } : {}),
    payer: options.payer,
    fees: options.fees,
    getLatestBlockhash: () => read((c) => c.getLatestBlockhash('confirmed')),
    getBlockHeight,
    sendRawTransaction: (bytes) => send(bytes, true),
    getSignatureStatus,
    async confirmTransaction(signature, lastValidBlockHeight, commitment = 'confirmed', confirm: ConfirmOptions = {}) {
      const deadline = options.clock.now() + (options.confirmTimeoutMs ?? 90_000);
      let pollMs = firstPollMs;
      let sentAt = options.clock.now();
      let rebroadcasting = false;
      for (;;) {
        const status = await orUnknown(() => getSignatureStatus(signature));
        if (status?.err) throw new NonRetriableError('program_error', `transaction ${signature} failed: ${JSON.stringify(status.err)}`);
        if (status && RANK[status.status] >= RANK[commitment]) return;
        if (status === null) {
          const height = await orUnknown(getBlockHeight);
          if (height !== undefined && height > lastValidBlockHeight) {
            // One last look: it may have landed in the final valid block.
            if (await getSignatureStatus(signature)) continue;
            throw new TransientError('blockhash_expired', `transaction ${signature} expired before landing`);
          }
          // Not seen: a leader may have dropped it. The same bytes again, never a new signature. The
          // polls go on meanwhile: a rebroadcast's lost answer must not hold them for a send timeout.
          if (confirm.rebroadcast && !rebroadcasting && options.clock.now() - sentAt >= rebroadcastMs) {
            sentAt = options.clock.now();
            rebroadcasting = true;
            void sendOnce(confirm.rebroadcast, false)
              .catch((error: unknown) => logger.debug({ signature, err: error }, 'rebroadcast failed; the next one follows'))
              .finally(() => (rebroadcasting = false));
            // Sent again, it may be seen at once: the polls start quick again.
            pollMs = firstPollMs;
            logger.debug({ signature }, 'transaction not seen yet; sent again');
          }
        }
        if (options.clock.now() > deadline) {
          throw new TransientError('confirm_timeout', `transaction ${signature} not ${commitment} in time`);
        }
        // Not seen yet: the next look is no later than the next rebroadcast is due.
        const untilRebroadcast = confirm.rebroadcast && status === null ? Math.max(50, sentAt + rebroadcastMs - options.clock.now()) : Infinity;
        await sleep(Math.min(pollMs, untilRebroadcast));
        pollMs = Math.min(2000, Math.round(pollMs * 1.5));
      }
    },
    getAccountInfo: (pubkey, commitment) => read((c) => c.getAccountInfo(pubkey, commitment ?? 'confirmed')),
    getBalance: (pubkey) => read((c) => c.getBalance(pubkey, 'confirmed')),
    // The node's JSON answer is parsed as a number: exact up to 2^53 lamports (about 9 million SOL).
    getLamports: async (pubkey) => BigInt(await read((c) => c.getBalance(pubkey, 'confirmed'))),
    // Not idempotent: one try, on the first endpoint whose breaker is not open.
    requestAirdrop: (pubkey, lamports) => pool.once((c) => c.requestAirdrop(pubkey, Number(lamports))),
    getMinimumBalanceForRentExemption: (size) => read((c) => c.getMinimumBalanceForRentExemption(size)),
    async isProgramExecutable(programId) {
      const info = await read((c) => c.getAccountInfo(programId, 'confirmed'));
      return info?.executable === true;
    },
    async probe() {
      // Every endpoint, each through its own breaker: the chain is down only when none answers.
      const results = await Promise.allSettled(
        pool.endpoints.map(async (endpoint): Promise<ChainProbe> => {
          const [clockAccount, payerAccount] = await endpoint.breaker.call(() =>
            endpoint.connection.getMultipleAccountsInfo([SYSVAR_CLOCK_PUBKEY, options.payer.publicKey], 'confirmed'),
          );
          if (!clockAccount) throw new TransientError('rpc_error', 'RPC returned no clock sysvar');
          return { slot: Number(clockAccount.data.readBigUInt64LE(0)), unixTimestamp: Number(clockAccount.data.readBigInt64LE(32)), payerBalance: payerAccount?.lamports ?? 0 };
        }),
      );
      results.forEach((r, i) => {
        const endpoint = pool.endpoints[i]!;
        lastProbe.set(endpoint.host, {
          host: endpoint.host,
          status: r.status === 'fulfilled' ? 'pass' : 'fail',
          breaker: endpoint.breaker.state().state,
          ...(r.status === 'rejected' ? { message: r.reason instanceof Error ? r.reason.message : String(r.reason) } : {}),
        });
      });
      const answered = results.find((r): r is PromiseFulfilledResult<ChainProbe> => r.status === 'fulfilled');
      if (answered) return answered.value;
      const first = (results[0] as PromiseRejectedResult).reason as unknown;
      throw pool.endpoints.length === 1 ? first : new TransientError('rpc_unavailable', `no RPC endpoint answers (${pool.endpoints.length} tried); primary: ${first instanceof Error ? first.message : String(first)}`);
    },
    endpointHealth: () => pool.endpoints.map((e) => lastProbe.get(e.host) ?? { host: e.host, status: 'fail', breaker: e.breaker.state().state, message: 'not probed yet' }),
    history: createRpcHistory(read),
    breakerState: () => pool.state(),
    async close() {
      pool.shutdown();
      logger.debug('rpc backend closed');
    },
  };
}
