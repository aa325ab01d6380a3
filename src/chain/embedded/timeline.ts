import { createHash } from 'node:crypto';
import bs58 from 'bs58';
import type { Clock } from '../../lib/clock.js';

/** Milliseconds per slot, as on mainnet. */
export const SLOT_MS = 400;
/** Blocks a blockhash stays usable, as on a real cluster. */
export const BLOCKHASH_VALIDITY_BLOCKS = 150;
const SLOTS_PER_EPOCH = 432_000;

/** The embedded chain's view of time at one instant. */
export interface ChainTime {
  slot: number;
  blockHeight: number;
  epoch: number;
  unixTimestamp: number;
}

/**
 * Wall-clock-driven slots and blockhashes for the embedded chain. The block height is the number
 * of 400 ms slots since the chain's genesis (persisted), so it keeps increasing across restarts;
 * the blockhash of height h is derived from the chain id and h, so a transaction's blockhash can be
 * checked for expiry statelessly: it is valid while the current height is at most h + 150.
 */
export interface Timeline {
  now(): ChainTime;
  blockhashAt(height: number): string;
  /** Height at which `blockhash` was issued, when it is still valid; undefined when expired/unknown. */
  validHeightOf(blockhash: string): number | undefined;
}

/**
 * Builds the timeline from the persisted genesis time and chain id. `floorHeight` is the highest
 * slot the chain ever recorded (its stored transactions): the height never goes below it, even when
 * the wall clock went backwards across a restart.
 */
export function createTimeline(clock: Clock, genesisMs: number, chainId: string, floorHeight = 0): Timeline {
  let lastHeight = floorHeight;
  const blockhashAt = (height: number): string =>
    bs58.encode(createHash('sha256').update(`embedded-blockhash:${chainId}:${height}`).digest());
  const now = (): ChainTime => {
    const nowMs = clock.now();
    // Never move backwards, even if the wall clock does.
    lastHeight = Math.max(lastHeight, Math.floor((nowMs - genesisMs) / SLOT_MS) + 1);
    return {
      slot: lastHeight,
      blockHeight: lastHeight,
      epoch: Math.floor(lastHeight / SLOTS_PER_EPOCH),
      unixTimestamp: Math.floor(nowMs / 1000),
    };
  };
  return {
    now,
    blockhashAt,
    validHeightOf(blockhash) {
      const current = now().blockHeight;
      for (let h = current; h >= Math.max(1, current - BLOCKHASH_VALIDITY_BLOCKS); h--) {
        if (blockhashAt(h) === blockhash) return h;
      }
      return undefined;
    },
  };
}
