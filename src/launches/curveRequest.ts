import { curveKit, curveLockedVesting, decimalSolToLamports, graduationQuoteLamports } from '../chain/programs/dbc/curve.js';
import type { FieldError, LaunchRequest } from './request.js';

/**
 * What only the curve itself can tell about a bonding-curve request: whether Meteora's SDK can
 * build a curve the program accepts from the market caps, supply and fees, and whether the first
 * buy fits in it (a buy that fills the curve would graduate it inside the creation). Loads the SDK
 * only for such a request.
 */
export async function curveRequestProblems(req: LaunchRequest): Promise<FieldError[]> {
  const pool = req.pool;
  if (pool?.kind !== 'bonding-curve') return [];
  const dbc = await curveKit();
  let threshold: bigint;
  try {
    threshold = graduationQuoteLamports(dbc.curveConfigParameters({ tokenStandard: req.tokenStandard, decimals: req.decimals, totalSupply: req.totalSupply, pool, lockedVesting: curveLockedVesting(req) }));
  } catch (error) {
    return [{ field: 'pool', message: `cannot make a curve the Dynamic Bonding Curve program accepts: ${(error as Error).message}` }];
  }
  if (threshold <= 0n) return [{ field: 'pool.graduationMarketCap', message: 'gives a curve that graduates at 0 SOL; raise it' }];
  if (pool.firstBuy && decimalSolToLamports(pool.firstBuy.quoteAmount) >= threshold) {
    return [{ field: 'pool.firstBuy.quoteAmount', message: `is larger than the curve: it graduates at ${formatSol(threshold)} SOL of buys, so the first buy must be less` }];
  }
  return [];
}

function formatSol(lamports: bigint): string {
  const whole = lamports / 1_000_000_000n;
  const fraction = (lamports % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}
