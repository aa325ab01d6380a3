import { NonRetriableError, TransientError } from '../lib/retry.js';

/**
 * Turns the text of a rejected transaction (RPC error message, simulation logs, LiteSVM error)
 * into the service's failure classes (docs/api.md). Returns `undefined` for "already processed",
 * which a sender treats as success.
 */
export function classifyTransactionFailure(text: string, cause?: unknown): Error | undefined {
  if (/already ?(been )?processed/i.test(text)) return undefined;
  if (/blockhash ?not ?found|block ?height ?exceeded|blockhash.*expired/i.test(text)) {
    return new TransientError('blockhash_expired', `blockhash expired: ${firstLine(text)}`, { cause });
  }
  // A created account (not the fee payer, index 0) short of rent: the program allocated more than
  // the service funded. A sizing bug, not the payer's balance; retried after the step re-plans.
  const rent = /InsufficientFundsForRent \{ account_index: (\d+) \}|account \((\d+)\) with insufficient funds for rent/i.exec(text);
  const rentIndex = rent ? Number(rent[1] ?? rent[2]) : undefined;
  if (rentIndex !== undefined && rentIndex > 0) {
    return new TransientError(
      'account_underfunded',
      `account ${rentIndex} of the transaction is not rent-exempt at the size the program allocated (the service sized it, not the payer's balance): ${firstLine(text)}`,
      { cause },
    );
  }
  if (
    /insufficient ?funds ?for ?(fee|rent)|insufficient lamports|no record of a prior credit|AccountNotFound|InvalidAccountForFee/i.test(text)
  ) {
    return new NonRetriableError('insufficient_balance', `payer balance too low: ${firstLine(text)}`, { cause });
  }
  return new NonRetriableError('program_error', `transaction failed: ${firstLine(text)}`, { cause });
}

/**
 * An RPC answer of 429 or 503 that named a `Retry-After`. Its message keeps the status first (as
 * web3.js words HTTP errors) and the delay in a fixed form, so the delay survives web3.js methods
 * that re-wrap errors as text.
 */
export class RpcHttpError extends Error {
  constructor(
    readonly status: number,
    statusText: string,
    readonly retryAfterMs: number,
  ) {
    super(`${status} ${statusText} (Retry-After ${retryAfterMs} ms)`);
    this.name = 'RpcHttpError';
  }
}

/** Classifies an RPC transport or server failure; transient unless it names a transaction failure. */
export function classifyRpcError(error: unknown): Error {
  if (error instanceof TransientError || error instanceof NonRetriableError) return error;
  const err = error instanceof Error ? error : new Error(String(error));
  const text = `${err.name} ${err.message} ${describeCause(err)}`;
  const after = /\(Retry-After (\d+) ms\)/.exec(text);
  const retryAfterMs = err instanceof RpcHttpError ? err.retryAfterMs : after ? Number(after[1]) : undefined;
  if (/TimeoutError|AbortError|timed? ?out|ETIMEDOUT/i.test(text)) {
    return new TransientError('rpc_timeout', `RPC request timed out: ${firstLine(err.message)}`, { cause: err });
  }
  if (/^429\b|\b429 Too Many|rate.?limit/i.test(err.message)) {
    return new TransientError('rpc_rate_limited', `RPC rate limited: ${firstLine(err.message)}`, { cause: err, retryAfterMs });
  }
  if (/^5\d\d\b|\b5\d\d Service Unavailable/.test(err.message)) {
    return new TransientError('rpc_unavailable', `RPC server error: ${firstLine(err.message)}`, { cause: err, retryAfterMs });
  }
  if (/fetch failed|ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|EAI_AGAIN|socket hang up|other side closed|network/i.test(text)) {
    return new TransientError('rpc_unavailable', `RPC unreachable: ${firstLine(err.message)}`, { cause: err });
  }
  if (/^\d{3}\b/.test(err.message)) {
    return new NonRetriableError('invalid_configuration', `RPC refused the request: ${firstLine(err.message)}`, { cause: err });
  }
  return new TransientError('rpc_error', `RPC request failed: ${firstLine(err.message)}`, { cause: err });
}

function describeCause(err: Error): string {
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) return `${cause.name} ${cause.message} ${(cause as { code?: string }).code ?? ''}`;
  return '';
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text;
  return line.trim().slice(0, 300);
}
