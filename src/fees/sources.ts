import { NATIVE_MINT } from '@solana/spl-token';
import { PublicKey } from '@solana/web3.js';
import type { ChainBackend } from '../chain/backend.js';
import { curveKit, type CurveState } from '../chain/programs/dbc/curve.js';
import { parseJson } from '../lib/json.js';

/** One place fees accrue for a launch's recipient, as `GET /api/launches/{id}/fees` shows it (docs/funding.md, "Creator fees"). */
export interface FeeSource {
  kind: 'curve' | 'amm-position' | 'cpmm';
  address: string;
  /** Base units per mint, decimal strings. */
  claimable: Record<string, string>;
}

/** What a launch's fee routes need of it. */
export interface FeeLaunch {
  id: string;
  owner: string;
  status: string;
  payer: string | null;
  request: string;
  results: string;
}

const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {});

/**
 * Who receives a launch's creator fees: `fees.recipient` of its request (default `creator`): the
 * request's `creator`, the DAO's native treasury (`treasury`, only with a `dao`) or the address given.
 * Undefined while the treasury does not exist yet (the launch has not made its DAO).
 */
export function feeRecipient(launch: Pick<FeeLaunch, 'request' | 'results'>): string | undefined {
  const request = obj(parseJson<unknown>(launch.request, {}));
  const chosen = obj(request.fees).recipient;
  if (chosen === undefined || chosen === 'creator') return typeof request.creator === 'string' ? request.creator : undefined;
  if (chosen === 'treasury') {
    const treasury = obj(obj(parseJson<unknown>(launch.results, {})).dao).treasury;
    return typeof treasury === 'string' ? treasury : undefined;
  }
  return typeof chosen === 'string' ? chosen : undefined;
}

/** The launch's token program (its request's `tokenStandard`, default token-2022). */
export function launchTokenStandard(launch: Pick<FeeLaunch, 'request'>): 'spl-token' | 'token-2022' {
  return obj(parseJson<unknown>(launch.request, {})).tokenStandard === 'spl-token' ? 'spl-token' : 'token-2022';
}

/** A read curve source, with the state its claim is built from. */
export interface CurveSource extends FeeSource {
  kind: 'curve';
  state: CurveState;
}

/**
 * Every source of the launch's creator fees, read from the chain. A bonding curve: the curve's
 * creator trading fee (`creator_quote_fee`, `creator_base_fee`), while the curve exists (before and
 * after graduation: fees left in the curve stay claimable). A CPMM launch has no source: its pool was
 * made with Raydium CPMM's plain `initialize`, which sets no creator fee (docs/funding.md).
 */
export async function readFeeSources(chain: Pick<ChainBackend, 'getAccountInfo'>, launch: Pick<FeeLaunch, 'results'>): Promise<CurveSource[]> {
  const pool = obj(obj(parseJson<unknown>(launch.results, {})).pool);
  if (pool.kind !== 'bonding-curve' || typeof pool.address !== 'string') return [];
  const info = await chain.getAccountInfo(new PublicKey(pool.address));
  if (!info) return [];
  const state = (await curveKit()).decodeCurveState(info.data);
  const claimable: Record<string, string> = { [NATIVE_MINT.toBase58()]: state.creatorQuoteFee.toString() };
  if (state.creatorBaseFee > 0n) claimable[state.baseMint.toBase58()] = state.creatorBaseFee.toString();
  return [{ kind: 'curve', address: pool.address, claimable, state }];
}

/** The sources as the API shows them (without the decoded state). */
export const presentSources = (sources: FeeSource[]): FeeSource[] => sources.map(({ kind, address, claimable }) => ({ kind, address, claimable }));
