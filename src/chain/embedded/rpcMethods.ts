import { PublicKey, VersionedMessage, VersionedTransaction, type AccountInfo } from '@solana/web3.js';
import bs58 from 'bs58';
import { NonRetriableError, TransientError } from '../../lib/retry.js';
import type { AccountFilter } from '../history.js';
import type { EmbeddedBackend } from './backend.js';
import { LAMPORTS_PER_SIGNATURE } from '../transaction.js';
import { uiAmount, wireMeta } from './history.js';
import { parsedTokenData, readMint, readTokenAccount, tokenAmount, TOKEN_PROGRAMS } from './rpcTokenAccounts.js';
import { decodeTransaction as decodeSvmTransaction, type Execution } from './svm.js';
import { currentNonce } from '../landSigned.js';

/** A JSON-RPC error as a Solana node sends it (`code`, `message`, optional `data`). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

type Params = unknown[];
type Method = (params: Params) => Promise<unknown>;

const MAX_SIGNATURES = 1000;
/** getTokenLargestAccounts answers at most this many, as a node does. */
const LARGEST_ACCOUNTS = 20;

const invalidParams = (message: string) => new RpcError(-32602, message);

function pubkeyParam(value: unknown, name = 'pubkey'): PublicKey {
  if (typeof value !== 'string') throw invalidParams(`Invalid param: ${name} must be a base58 string`);
  try {
    return new PublicKey(value);
  } catch {
    throw invalidParams(`Invalid param: Invalid`);
  }
}

const configOf = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});

function decodeWire(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== 'string') throw invalidParams('Invalid param: transaction must be an encoded string');
  try {
    return encoding === 'base64' ? Buffer.from(value, 'base64') : bs58.decode(value);
  } catch {
    throw invalidParams(`Invalid param: invalid ${encoding === 'base64' ? 'base64' : 'base58'} encoding`);
  }
}

/** The wire bytes of an encoded transaction and the transaction they hold, or the node's invalid-params error. */
function decodeTransaction(value: unknown, encoding: unknown): { bytes: Uint8Array; tx: VersionedTransaction } {
  const bytes = decodeWire(value, encoding);
  try {
    return { bytes, tx: VersionedTransaction.deserialize(bytes) };
  } catch {
    throw invalidParams('failed to deserialize transaction');
  }
}

function encodeAccount(info: AccountInfo<Buffer> | null, config: Record<string, unknown>) {
  if (!info) return null;
  const slice = configOf(config.dataSlice);
  const data = typeof slice.offset === 'number' && typeof slice.length === 'number' ? info.data.subarray(slice.offset, slice.offset + slice.length) : info.data;
  return {
    data: config.encoding === 'base58' ? [bs58.encode(data), 'base58'] : [data.toString('base64'), 'base64'],
    executable: info.executable,
    lamports: info.lamports,
    owner: info.owner.toBase58(),
    rentEpoch: Number.MAX_SAFE_INTEGER,
    space: info.data.length,
  };
}

function filtersOf(value: unknown): AccountFilter[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidParams('Invalid param: filters must be an array');
  return value.map((f: unknown) => {
    const filter = configOf(f);
    if (typeof filter.dataSize === 'number') return { dataSize: filter.dataSize };
    const memcmp = configOf(filter.memcmp);
    if (typeof memcmp.offset === 'number' && typeof memcmp.bytes === 'string') {
      const bytes = memcmp.encoding === 'base64' ? bs58.encode(Buffer.from(memcmp.bytes, 'base64')) : memcmp.bytes;
      return { memcmp: { offset: memcmp.offset, bytes } };
    }
    throw invalidParams('Invalid param: filters support dataSize and memcmp');
  });
}

/** The message a node puts in front of a failed preflight's logs. */
export function describeTransactionError(err: unknown): string {
  if (err !== null && typeof err === 'object' && 'InstructionError' in err) {
    const [index, inner] = (err as { InstructionError: [number, unknown] }).InstructionError;
    if (inner !== null && typeof inner === 'object' && 'Custom' in inner) {
      return `Error processing Instruction ${index}: custom program error: 0x${Number((inner as { Custom: number }).Custom).toString(16)}`;
    }
    return `Error processing Instruction ${index}: ${typeof inner === 'string' ? inner : JSON.stringify(inner)}`;
  }
  if (err === 'AccountNotFound') return 'Attempt to debit an account but found no record of a prior credit.';
  if (err === 'BlockhashNotFound') return 'Blockhash not found';
  if (err === 'InsufficientFundsForFee') return 'Insufficient funds for fee';
  if (err === 'AlreadyProcessed') return 'This transaction has already been processed';
  return typeof err === 'string' ? err : JSON.stringify(err);
}

function simulationFailure(outcome: Execution): RpcError {
  return new RpcError(-32002, `Transaction simulation failed: ${describeTransactionError(outcome.err)}`, {
    err: outcome.err,
    logs: outcome.logs,
    accounts: null,
    unitsConsumed: outcome.computeUnits,
    returnData: null,
  });
}

const blockhashNotFound = () =>
  new RpcError(-32002, 'Transaction simulation failed: Blockhash not found', { err: 'BlockhashNotFound', logs: [], accounts: null, unitsConsumed: 0, returnData: null });

/**
 * The Solana JSON-RPC methods the embedded chain answers (docs/chain.md): what `@solana/web3.js`
 * `Connection`, the Solana CLI and wallets use to read accounts, send and confirm transactions,
 * and read history. Every answer comes from the same chain the service launches on.
 */
export function embeddedRpcMethods(chain: EmbeddedBackend): Record<string, Method> {
  const slot = () => chain.now().slot;
  const ctx = (value: unknown) => ({ context: { apiVersion: '2.2.0', slot: slot() }, value });

  const decimalsOf = async (mint: string) => readMint(await chain.getAccountInfo(new PublicKey(mint)))?.decimals ?? 0;
  /** An account in the requested encoding; `jsonParsed` parses token mints and accounts, anything else comes in base64. */
  const encode = async (info: AccountInfo<Buffer> | null, config: Record<string, unknown>) => {
    if (config.encoding !== 'jsonParsed' || !info) return encodeAccount(info, config);
    const parsed = await parsedTokenData(info, decimalsOf);
    const base = encodeAccount(info, {});
    return parsed === undefined || base === null ? base : { ...base, data: parsed };
  };
  const mintParam = async (value: unknown) => {
    const address = pubkeyParam(value, 'mint');
    const info = await chain.getAccountInfo(address);
    const mint = readMint(info);
    if (!info || !mint) throw invalidParams('Invalid param: not a Token mint');
    return { address, program: info.owner, mint };
  };

  const tokenAccountsOf = async (owner: PublicKey, filter: Record<string, unknown>) => {
    let programs = TOKEN_PROGRAMS;
    const memcmps: AccountFilter[] = [{ memcmp: { offset: 32, bytes: owner.toBase58() } }];
    if (typeof filter.mint === 'string') memcmps.push({ memcmp: { offset: 0, bytes: pubkeyParam(filter.mint, 'mint').toBase58() } });
    else if (typeof filter.programId === 'string') programs = [pubkeyParam(filter.programId, 'programId').toBase58()];
    else throw invalidParams('Invalid param: expected mint or programId');
    const found = [];
    for (const program of programs) {
      for (const entry of await chain.programAccounts(new PublicKey(program), memcmps)) {
        // Token-2022 mints can be 165 bytes long too; a token account carries account type 2 past the base layout.
        const data = entry.account.data;
        if (data.length < 165 || (data.length > 165 && data[165] !== 2)) continue;
        found.push(entry);
      }
    }
    return found;
  };

  /**
   * Whether a transaction can still land as far as its blockhash goes: a recent blockhash, or, for a
   * durable-nonce transaction (its first instruction advances a nonce account), the nonce its
   * account holds now, as a node checks it.
   */
  const blockhashCurrent = async (bytes: Uint8Array, recentBlockhash: string): Promise<boolean> => {
    const nonceAccount = decodeSvmTransaction(bytes).nonceAccount;
    if (nonceAccount === undefined) return chain.isBlockhashValid(recentBlockhash);
    return (await currentNonce(chain, new PublicKey(nonceAccount))) === recentBlockhash;
  };

  const sendTransaction: Method = async ([encoded, rawConfig]) => {
    const config = configOf(rawConfig);
    const { bytes, tx } = decodeTransaction(encoded, config.encoding);
    const signature = bs58.encode(tx.signatures[0] ?? new Uint8Array(64));
    if ((await chain.getSignatureStatus(signature)) !== null) return signature;
    if (!(await blockhashCurrent(bytes, tx.message.recentBlockhash))) throw blockhashNotFound();
    if (config.skipPreflight !== true) {
      const outcome = await chain.simulate(bytes, { sigVerify: true });
      if (!outcome.ok) throw simulationFailure(outcome);
    }
    try {
      return await chain.sendRawTransaction(bytes);
    } catch (error) {
      // Landed but failed (skipPreflight): it is on chain with its error, as on a real node.
      if ((await chain.getSignatureStatus(signature)) !== null) return signature;
      if (error instanceof TransientError && error.code === 'blockhash_expired') throw blockhashNotFound();
      if (error instanceof NonRetriableError || error instanceof TransientError) {
        throw new RpcError(-32002, `Transaction simulation failed: ${error.message.split('\n')[0] ?? ''}`, { err: error.code, logs: [], accounts: null, unitsConsumed: 0, returnData: null });
      }
      throw error;
    }
  };

  return {
    getHealth: async () => 'ok',
    getVersion: async () => ({ 'solana-core': '2.2.0', 'feature-set': 3294202862 }),
    getGenesisHash: async () => chain.genesisHash,
    getIdentity: async () => ({ identity: chain.payer.publicKey.toBase58() }),
    getSlot: async () => slot(),
    getBlockHeight: async () => chain.now().blockHeight,
    getTransactionCount: async () => chain.transactionCount(),
    getEpochInfo: async () => {
      const now = chain.now();
      return { absoluteSlot: now.slot, blockHeight: now.blockHeight, epoch: now.epoch, slotIndex: now.slot % 432_000, slotsInEpoch: 432_000, transactionCount: chain.transactionCount() };
    },
    getRecentPrioritizationFees: async () => [],
    getLatestBlockhash: async () => ctx(await chain.getLatestBlockhash()),
    isBlockhashValid: async ([blockhash]) => ctx(typeof blockhash === 'string' && chain.isBlockhashValid(blockhash)),
    getMinimumBalanceForRentExemption: async ([size]) => {
      if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) throw invalidParams('Invalid param: data length must be a non-negative integer');
      return chain.getMinimumBalanceForRentExemption(size);
    },
    getFeeForMessage: async ([message]) => {
      if (typeof message !== 'string') throw invalidParams('Invalid param: message must be a base64 string');
      try {
        const parsed = VersionedMessage.deserialize(Buffer.from(message, 'base64'));
        return ctx(LAMPORTS_PER_SIGNATURE * parsed.header.numRequiredSignatures);
      } catch {
        throw invalidParams('Invalid param: failed to deserialize message');
      }
    },
    getBalance: async ([pubkey]) => ctx(await chain.getBalance(pubkeyParam(pubkey))),
    getAccountInfo: async ([pubkey, config]) => ctx(await encode(await chain.getAccountInfo(pubkeyParam(pubkey)), configOf(config))),
    getMultipleAccounts: async ([keys, config]) => {
      if (!Array.isArray(keys) || keys.length > 100) throw invalidParams('Invalid param: expected at most 100 pubkeys');
      const list = keys.map((k) => pubkeyParam(k));
      return ctx(await Promise.all(list.map(async (k) => encode(await chain.getAccountInfo(k), configOf(config)))));
    },
    getProgramAccounts: async ([programId, rawConfig]) => {
      const config = configOf(rawConfig);
      const found = await chain.programAccounts(pubkeyParam(programId, 'program id'), filtersOf(config.filters));
      const list = await Promise.all(found.map(async (e) => ({ pubkey: e.pubkey.toBase58(), account: await encode(e.account, config) })));
      return config.withContext === true ? ctx(list) : list;
    },
    getTokenAccountsByOwner: async ([owner, filter, config]) => {
      const found = await tokenAccountsOf(pubkeyParam(owner, 'owner'), configOf(filter));
      return ctx(await Promise.all(found.map(async (e) => ({ pubkey: e.pubkey.toBase58(), account: await encode(e.account, configOf(config)) }))));
    },
    getTokenSupply: async ([mint]) => {
      const { mint: fields } = await mintParam(mint);
      return ctx(tokenAmount(fields.supply, fields.decimals));
    },
    getTokenLargestAccounts: async ([mint]) => {
      const { address, program, mint: fields } = await mintParam(mint);
      const holders = [];
      for (const entry of await chain.programAccounts(program, [{ memcmp: { offset: 0, bytes: address.toBase58() } }])) {
        const account = readTokenAccount(entry.account);
        if (account) holders.push({ address: entry.pubkey.toBase58(), amount: account.amount });
      }
      holders.sort((a, b) => (a.amount === b.amount ? a.address.localeCompare(b.address) : a.amount > b.amount ? -1 : 1));
      return ctx(holders.slice(0, LARGEST_ACCOUNTS).map((h) => ({ address: h.address, ...tokenAmount(h.amount, fields.decimals) })));
    },
    getTokenAccountBalance: async ([pubkey]) => {
      const info = await chain.getAccountInfo(pubkeyParam(pubkey));
      if (!info || !TOKEN_PROGRAMS.includes(info.owner.toBase58()) || info.data.length < 165) {
        throw invalidParams('Invalid param: not a Token account');
      }
      const mint = await chain.getAccountInfo(new PublicKey(info.data.subarray(0, 32)));
      const decimals = mint && mint.data.length >= 45 ? (mint.data[44] ?? 0) : 0;
      const amount = info.data.readBigUInt64LE(64).toString();
      return ctx({ amount, decimals, ...uiAmount(amount, decimals) });
    },
    getSignatureStatuses: async ([signatures]) => {
      if (!Array.isArray(signatures) || signatures.length > 256) throw invalidParams('Invalid param: expected at most 256 signatures');
      const infos = await chain.signatureInfos(signatures.map((sig) => (typeof sig === 'string' ? sig : '')));
      const statuses = infos.map((info) =>
        info ? { slot: info.slot, confirmations: null, err: info.err, status: info.err === null ? { Ok: null } : { Err: info.err }, confirmationStatus: 'finalized' } : null,
      );
      return ctx(statuses);
    },
    getSignaturesForAddress: async ([addr, rawConfig]) => {
      const config = configOf(rawConfig);
      const limit = config.limit === undefined ? MAX_SIGNATURES : Number(config.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SIGNATURES) throw invalidParams('Invalid param: limit must be 1..1000');
      const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
      const list = await chain.history.signaturesForAddress(pubkeyParam(addr, 'address').toBase58(), { before: str(config.before), until: str(config.until), limit });
      return list.map((s) => ({ signature: s.signature, slot: s.slot, err: s.err, memo: null, blockTime: s.blockTime, confirmationStatus: 'finalized' }));
    },
    getTransaction: async ([signature, rawConfig]) => {
      const config = configOf(rawConfig);
      if (typeof signature !== 'string') throw invalidParams('Invalid param: signature must be a base58 string');
      const stored = await chain.storedTransaction(signature);
      if (!stored) return null;
      const tx = VersionedTransaction.deserialize(stored.bytes);
      const version = tx.version;
      if (version !== 'legacy' && config.maxSupportedTransactionVersion === undefined) {
        throw new RpcError(-32015, `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`);
      }
      const message = tx.message;
      const transaction =
        config.encoding === 'base64'
          ? [Buffer.from(stored.bytes).toString('base64'), 'base64']
          : {
              signatures: tx.signatures.map((s) => bs58.encode(s)),
              message: {
                accountKeys: message.staticAccountKeys.map((k) => k.toBase58()),
                header: message.header,
                recentBlockhash: message.recentBlockhash,
                instructions: message.compiledInstructions.map((ix) => ({
                  programIdIndex: ix.programIdIndex,
                  accounts: ix.accountKeyIndexes,
                  data: bs58.encode(ix.data),
                  stackHeight: null,
                })),
                ...(version === 'legacy' ? {} : { addressTableLookups: message.addressTableLookups }),
              },
            };
      return { slot: stored.slot, blockTime: stored.blockTime, transaction, meta: wireMeta(stored.meta), version: config.maxSupportedTransactionVersion === undefined ? undefined : version };
    },
    sendTransaction,
    simulateTransaction: async ([encoded, rawConfig]) => {
      const config = configOf(rawConfig);
      const { bytes, tx } = decodeTransaction(encoded, config.encoding);
      const replace = config.replaceRecentBlockhash === true;
      if (!replace && !(await blockhashCurrent(bytes, tx.message.recentBlockhash))) {
        return ctx({ err: 'BlockhashNotFound', logs: [], accounts: null, unitsConsumed: 0, returnData: null });
      }
      const outcome = await chain.simulate(bytes, { sigVerify: config.sigVerify === true });
      return ctx({
        err: outcome.err,
        logs: outcome.logs,
        accounts: null,
        unitsConsumed: outcome.computeUnits,
        returnData: null,
        ...(replace ? { replacementBlockhash: await chain.getLatestBlockhash() } : {}),
      });
    },
    requestAirdrop: async ([pubkey, lamports]) => {
      if (typeof lamports !== 'number' || !Number.isSafeInteger(lamports) || lamports <= 0) throw invalidParams('Invalid param: lamports must be a positive integer');
      return chain.requestAirdrop(pubkeyParam(pubkey), BigInt(lamports));
    },
  };
}
