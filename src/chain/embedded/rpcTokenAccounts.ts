import { PublicKey, type AccountInfo } from '@solana/web3.js';
import { uiAmount } from './history.js';

/**
 * SPL Token and Token-2022 accounts read as a Solana node reads them for `jsonParsed` and the token
 * read methods (docs/chain.md): the base layouts only (a Token-2022 account's extensions are not
 * listed). Layouts: a mint is mintAuthority COption (0..36), supply u64 (36), decimals u8 (44),
 * isInitialized (45), freezeAuthority COption (46..82); a token account is mint (0), owner (32),
 * amount u64 (64), delegate COption (72..108), state u8 (108), isNative COption<u64> (109..121).
 */
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
export const TOKEN_PROGRAMS = [TOKEN_PROGRAM, TOKEN_2022_PROGRAM];

const MINT_SIZE = 82;
const TOKEN_ACCOUNT_SIZE = 165;
/** Token-2022's account-type byte past the base layout: 1 mint, 2 token account. */
const ACCOUNT_TYPE_OFFSET = 165;

export interface MintFields {
  supply: bigint;
  decimals: number;
  mintAuthority: string | null;
  freezeAuthority: string | null;
  isInitialized: boolean;
}

export interface TokenAccountFields {
  mint: string;
  owner: string;
  amount: bigint;
  state: 'uninitialized' | 'initialized' | 'frozen';
  isNative: boolean;
}

const isTokenProgram = (owner: PublicKey) => TOKEN_PROGRAMS.includes(owner.toBase58());

function option(data: Buffer, offset: number): string | null {
  return data.readUInt32LE(offset) === 1 ? new PublicKey(data.subarray(offset + 4, offset + 36)).toBase58() : null;
}

/** The mint's fields, or undefined when the account is not a token mint. */
export function readMint(info: AccountInfo<Buffer> | null): MintFields | undefined {
  if (!info || !isTokenProgram(info.owner)) return undefined;
  const data = info.data;
  if (data.length === MINT_SIZE || (data.length > ACCOUNT_TYPE_OFFSET && data[ACCOUNT_TYPE_OFFSET] === 1)) {
    return { mintAuthority: option(data, 0), supply: data.readBigUInt64LE(36), decimals: data[44] ?? 0, isInitialized: data[45] === 1, freezeAuthority: option(data, 46) };
  }
  return undefined;
}

/** The token account's fields, or undefined when the account is not a token account. */
export function readTokenAccount(info: AccountInfo<Buffer> | null): TokenAccountFields | undefined {
  if (!info || !isTokenProgram(info.owner)) return undefined;
  const data = info.data;
  if (data.length < TOKEN_ACCOUNT_SIZE || (data.length > TOKEN_ACCOUNT_SIZE && data[ACCOUNT_TYPE_OFFSET] !== 2)) return undefined;
  const state = data[108] === 2 ? 'frozen' : data[108] === 1 ? 'initialized' : 'uninitialized';
  return {
    mint: new PublicKey(data.subarray(0, 32)).toBase58(),
    owner: new PublicKey(data.subarray(32, 64)).toBase58(),
    amount: data.readBigUInt64LE(64),
    state,
    isNative: data.readUInt32LE(109) === 1,
  };
}

/** A token amount as the node shows it (`amount`, `decimals`, `uiAmount`, `uiAmountString`). */
export function tokenAmount(amount: bigint, decimals: number) {
  const text = amount.toString();
  return { amount: text, decimals, ...uiAmount(text, decimals) };
}

/**
 * The `jsonParsed` data of a token mint or token account (`decimalsOf` reads a token account's
 * mint), or undefined for any other account, which a node then answers in base64.
 */
export async function parsedTokenData(info: AccountInfo<Buffer> | null, decimalsOf: (mint: string) => Promise<number>): Promise<Record<string, unknown> | undefined> {
  if (!info) return undefined;
  const program = info.owner.toBase58() === TOKEN_2022_PROGRAM ? 'spl-token-2022' : 'spl-token';
  const mint = readMint(info);
  if (mint) {
    const parsed = { type: 'mint', info: { decimals: mint.decimals, freezeAuthority: mint.freezeAuthority, isInitialized: mint.isInitialized, mintAuthority: mint.mintAuthority, supply: mint.supply.toString() } };
    return { program, parsed, space: info.data.length };
  }
  const account = readTokenAccount(info);
  if (account) {
    const decimals = await decimalsOf(account.mint);
    const parsed = { type: 'account', info: { isNative: account.isNative, mint: account.mint, owner: account.owner, state: account.state, tokenAmount: tokenAmount(account.amount, decimals) } };
    return { program, parsed, space: info.data.length };
  }
  return undefined;
}
