import { Keypair, PublicKey, type Connection, type Transaction } from '@solana/web3.js';
import BN from 'bn.js';
import { DynamicBondingCurveClient, SwapMode } from '@meteora-ag/dynamic-bonding-curve-sdk';
import type { ChainBackend } from '../../../src/chain/backend.js';
import { curveKit } from '../../../src/chain/programs/dbc/curve.js';
import { launchBody } from '../../support/fixtures.js';

export const WSOL = 'So11111111111111111111111111111111111111112';

/** A bonding-curve launch request (80 SOL to graduate: 20 % of a 400 SOL market cap). */
export function curveBody(overrides: Record<string, unknown> = {}, pool: Record<string, unknown> = {}) {
  return launchBody({
    totalSupply: '1000000000',
    decimals: 9,
    allocations: { pool: 100 },
    pool: { kind: 'bonding-curve', quoteMint: WSOL, initialMarketCap: '30', graduationMarketCap: '400', graduationSupplyPercent: 20, tradingFeeBps: 100, creatorFeePercent: 50, antiSniping: false, firstBuy: { quoteAmount: '0.5' }, ...pool },
    ...overrides,
  });
}

/** Meteora's SDK over a chain that answers account reads: the outside traders' code, not ours. */
export function outsideTrader(chain: Pick<ChainBackend, 'getAccountInfo' | 'getLatestBlockhash' | 'sendRawTransaction' | 'confirmTransaction'>) {
  const connection = {
    rpcEndpoint: 'embedded',
    getAccountInfo: (key: PublicKey) => chain.getAccountInfo(key),
    getAccountInfoAndContext: async (key: PublicKey) => ({ context: { slot: 0 }, value: await chain.getAccountInfo(key) }),
  } as unknown as Connection;
  const client = new DynamicBondingCurveClient(connection, 'confirmed');
  const send = async (tx: Transaction, signers: Keypair[]) => {
    const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
    tx.recentBlockhash = blockhash;
    tx.feePayer = signers[0]!.publicKey;
    tx.sign(...signers);
    const signature = await chain.sendRawTransaction(tx.serialize());
    await chain.confirmTransaction(signature, lastValidBlockHeight);
    return signature;
  };
  /** One buy of `lamports` (partial fill: the buy that reaches the end takes only what is left). */
  const buy = async (trader: Keypair, pool: PublicKey, lamports: bigint) => {
    const tx = await client.pool.swap2({ owner: trader.publicKey, pool, swapMode: SwapMode.PartialFill, amountIn: new BN(lamports.toString()), minimumAmountOut: new BN(0), swapBaseForQuote: false, referralTokenAccount: null });
    return send(tx, [trader]);
  };
  /** The curve's state, decoded. */
  const curve = async (pool: PublicKey) => (await curveKit()).decodeCurveState((await chain.getAccountInfo(pool))!.data);
  return { client, send, buy, curve };
}

/** Polls `check` every 100 ms until it returns a value, or throws after `ms`. */
export async function until<T>(what: string, ms: number, check: () => Promise<T | undefined | false>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got !== undefined && got !== false) return got;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
