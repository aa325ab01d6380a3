import { PublicKey, type Connection, type GetProgramAccountsFilter } from '@solana/web3.js';
import bs58 from 'bs58';
import type { ChainHistory, HistoryTransaction, TokenBalance } from '../history.js';

type RpcTokenBalances = Array<{ accountIndex: number; mint: string; owner?: string | undefined; uiTokenAmount: { amount: string } }> | null | undefined;

const tokenBalances = (list: RpcTokenBalances): TokenBalance[] =>
  (list ?? []).map((b) => ({ accountIndex: b.accountIndex, mint: b.mint, owner: b.owner ?? null, amount: b.uiTokenAmount.amount }));

/**
 * The watcher's reads on any cluster: the `getSignaturesForAddress`/`getTransaction` cursor poller
 * at `finalized` (what is reported can never be rolled back), every call through `read` (failover
 * over the endpoints, each behind its breaker).
 */
export function createRpcHistory(read: <T>(fn: (connection: Connection) => Promise<T>) => Promise<T>): ChainHistory {
  const call = read;
  return {
    async signaturesForAddress(address, options) {
      const list = await call((connection) =>
        connection.getSignaturesForAddress(new PublicKey(address), { until: options.until, before: options.before, limit: options.limit }, 'finalized'),
      );
      return list.map((s) => ({ signature: s.signature, slot: s.slot, err: s.err ?? null, blockTime: s.blockTime ?? null }));
    },
    async getTransaction(signature): Promise<HistoryTransaction | null> {
      const tx = await call((connection) => connection.getTransaction(signature, { commitment: 'finalized', maxSupportedTransactionVersion: 0 }));
      if (!tx) return null;
      const loaded = tx.meta?.loadedAddresses;
      const keys = [
        ...tx.transaction.message.staticAccountKeys.map((k) => k.toBase58()),
        ...(loaded?.writable ?? []).map((k) => k.toBase58()),
        ...(loaded?.readonly ?? []).map((k) => k.toBase58()),
      ];
      return {
        signature,
        slot: tx.slot,
        blockTime: tx.blockTime ?? null,
        err: tx.meta?.err ?? null,
        accountKeys: keys,
        instructions: tx.transaction.message.compiledInstructions.map((ix) => ({
          programId: keys[ix.programIdIndex] as string,
          accounts: ix.accountKeyIndexes.map((i) => keys[i] as string),
          data: ix.data,
        })),
        innerInstructions: (tx.meta?.innerInstructions ?? []).map((entry) => ({
          index: entry.index,
          instructions: entry.instructions.map((ix) => ({ programId: keys[ix.programIdIndex] as string, accounts: ix.accounts.map((i) => keys[i] as string), data: bs58.decode(ix.data) })),
        })),
        logs: tx.meta?.logMessages ?? [],
        preTokenBalances: tokenBalances(tx.meta?.preTokenBalances),
        postTokenBalances: tokenBalances(tx.meta?.postTokenBalances),
        // web3.js parses the answer's u64s as JS numbers: exact up to 2^53 (a wallet holds far less on a real cluster).
        preBalances: (tx.meta?.preBalances ?? []).map(BigInt),
        postBalances: (tx.meta?.postBalances ?? []).map(BigInt),
      };
    },
    getAccountInfo: (pubkey) => call((connection) => connection.getAccountInfo(pubkey, 'finalized')),
    async getProgramAccounts(programId, filters) {
      const list = await call((connection) => connection.getProgramAccounts(programId, { commitment: 'finalized', filters: filters as GetProgramAccountsFilter[] }));
      return list.map((entry) => ({ pubkey: entry.pubkey, account: entry.account }));
    },
  };
}
