import { NATIVE_MINT } from '@solana/spl-token';
import { PublicKey } from '@solana/web3.js';
import type { ChainBackend } from '../chain/backend.js';
import { curveKit, type CurveState } from '../chain/programs/dbc/curve.js';
import { dammKit, pendingPositionFees, type DammPoolState, type DammPositionState } from '../chain/programs/dbc/dammPosition.js';
import { DAMM_V2_PROGRAM_ID } from '../chain/programs/programIds.js';
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
  /** The DAMM v2 positions the curve's graduation gave its DBC creator (`pool.graduated`'s `positions`); none before. */
  positions?: GraduatedPosition[] | undefined;
}

/** A position of a graduated curve, as the graduation recorded it. */
export interface GraduatedPosition {
  address: string;
  nftMint: string;
  nftAccount: string;
  owner: string;
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

/** A read DAMM v2 position source, with what its claim is built from. */
export interface PositionSource extends FeeSource {
  kind: 'amm-position';
  pool: string;
  nftAccount: string;
  poolState: DammPoolState;
  position: DammPositionState;
  /** What `claim_position_fee` would pay now, per token (a: the launched token, b: SOL). */
  pending: { a: bigint; b: bigint };
}

export type ReadSource = CurveSource | PositionSource;

/** SOL claimable from the read sources (lamports). */
export function claimableLamports(sources: ReadSource[]): bigint {
  return sources.reduce((sum, s) => sum + BigInt(s.claimable[NATIVE_MINT.toBase58()] ?? '0'), 0n);
}

/** Whether a read source has anything to claim. */
export const hasClaimable = (s: ReadSource): boolean => (s.kind === 'curve' ? s.state.creatorQuoteFee > 0n || s.state.creatorBaseFee > 0n : s.pending.a > 0n || s.pending.b > 0n);

/**
 * Every source of the launch's creator fees, read from the chain. A bonding curve: the curve's
 * creator trading fee (`creator_quote_fee`, `creator_base_fee`), while the curve exists (before and
 * after graduation: fees left in the curve stay claimable), and after graduation each DAMM v2
 * position the graduation gave the curve's DBC creator: what `claim_position_fee` would pay now
 * ({@link pendingPositionFees}). A CPMM launch has no source: its pool was made with Raydium CPMM's
 * plain `initialize`, which sets no creator fee (docs/funding.md).
 */
export async function readFeeSources(chain: Pick<ChainBackend, 'getAccountInfo'>, launch: Pick<FeeLaunch, 'results' | 'positions'>): Promise<ReadSource[]> {
  const pool = obj(obj(parseJson<unknown>(launch.results, {})).pool);
  if (pool.kind !== 'bonding-curve' || typeof pool.address !== 'string') return [];
  const sources: ReadSource[] = [];
  const info = await chain.getAccountInfo(new PublicKey(pool.address));
  if (info) {
    const state = (await curveKit()).decodeCurveState(info.data);
    const claimable: Record<string, string> = { [NATIVE_MINT.toBase58()]: state.creatorQuoteFee.toString() };
    if (state.creatorBaseFee > 0n) claimable[state.baseMint.toBase58()] = state.creatorBaseFee.toString();
    sources.push({ kind: 'curve', address: pool.address, claimable, state });
  }
  if (!launch.positions?.length) return sources;
  const kit = await dammKit();
  for (const p of launch.positions) {
    const positionInfo = await chain.getAccountInfo(new PublicKey(p.address));
    if (!positionInfo?.owner.equals(DAMM_V2_PROGRAM_ID)) continue;
    const position = kit.decodePosition(positionInfo.data);
    const poolInfo = await chain.getAccountInfo(position.pool);
    if (!poolInfo?.owner.equals(DAMM_V2_PROGRAM_ID)) continue;
    const poolState = kit.decodePool(poolInfo.data);
    const pending = pendingPositionFees(poolState, position);
    // SOL first and always (the quote); the launched token when it has some (buys pay their fee in it).
    const claimable: Record<string, string> = {};
    const sides = [[poolState.tokenBMint, pending.b], [poolState.tokenAMint, pending.a]] as const;
    for (const [mint, amount] of [...sides].sort(([m]) => (m.equals(NATIVE_MINT) ? -1 : 1))) {
      if (amount > 0n || mint.equals(NATIVE_MINT)) claimable[mint.toBase58()] = amount.toString();
    }
    sources.push({ kind: 'amm-position', address: p.address, claimable, pool: position.pool.toBase58(), nftAccount: p.nftAccount, poolState, position, pending });
  }
  return sources;
}

/** The sources as the API shows them (without the decoded state). */
export const presentSources = (sources: FeeSource[]): FeeSource[] => sources.map(({ kind, address, claimable }) => ({ kind, address, claimable }));
