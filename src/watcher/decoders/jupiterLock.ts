import { instructionDiscriminator } from '../../chain/programs/anchor.js';
import type { VestingEscrowAccount } from '../../chain/programs/jupiterLock/escrowAccount.js';
import type { HistoryTransaction } from '../../chain/history.js';
import { allInstructions } from './instructions.js';

const CLAIM = instructionDiscriminator('claim');
const CLAIM_V2 = instructionDiscriminator('claim_v2');
const CLOSE = instructionDiscriminator('close_vesting_escrow');

/** A Jupiter Lock claim (v1 or v2) on one escrow, with the amount that left the escrow's token account. */
export interface VestingClaim {
  instructionIndex: number;
  version: 1 | 2;
  escrow: string;
  recipient: string;
  recipientToken: string;
  maxAmount: bigint;
  amount: bigint;
}

const startsWith = (data: Uint8Array, prefix: Uint8Array) => data.length >= prefix.length && prefix.every((b, i) => data[i] === b);

/** Raw token amount of `account` before and after the transaction (0 when absent). */
function tokenDelta(tx: HistoryTransaction, account: string): bigint {
  const index = tx.accountKeys.indexOf(account);
  const amount = (list: HistoryTransaction['preTokenBalances']) => BigInt(list.find((b) => b.accountIndex === index)?.amount ?? '0');
  return amount(tx.preTokenBalances) - amount(tx.postTokenBalances);
}

/**
 * The claims a successful transaction makes on `escrow`, top-level or invoked by another program
 * (a multisig or a DAO claiming for its treasury); see {@link allInstructions} for the keys.
 * Accounts: claim `[escrow, escrow_token, recipient, recipient_token, …]`; claim_v2 `[escrow,
 * token_mint, escrow_token, recipient, recipient_token, …]`; data: discriminator + `max_amount` u64.
 * The amount is what left the escrow token account; several claims in one transaction share it in order.
 */
export function decodeVestingClaims(tx: HistoryTransaction, programId: string, escrow: string): VestingClaim[] {
  const claims: VestingClaim[] = [];
  const left = new Map<string, bigint>();
  allInstructions(tx).forEach(({ ix, key: instructionIndex }) => {
    if (ix.programId !== programId || ix.accounts[0] !== escrow) return;
    const version = startsWith(ix.data, CLAIM) ? 1 : startsWith(ix.data, CLAIM_V2) ? 2 : undefined;
    if (version === undefined || ix.data.length < 16) return;
    const [escrowToken, recipient, recipientToken] = version === 1 ? ix.accounts.slice(1, 4) : ix.accounts.slice(2, 5);
    if (!escrowToken || !recipient || !recipientToken) return;
    const maxAmount = Buffer.from(ix.data).readBigUInt64LE(8);
    const available = left.get(escrowToken) ?? tokenDelta(tx, escrowToken);
    const amount = available < maxAmount ? available : maxAmount;
    left.set(escrowToken, available - amount);
    claims.push({ instructionIndex, version, escrow, recipient, recipientToken, maxAmount, amount });
  });
  return claims;
}

/** The instruction key of a `close_vesting_escrow` on `escrow` (top-level or inner), when the transaction closes it. */
export function findEscrowClose(tx: HistoryTransaction, programId: string, escrow: string): number | undefined {
  return allInstructions(tx).find(({ ix }) => ix.programId === programId && ix.accounts[0] === escrow && startsWith(ix.data, CLOSE))?.key;
}

/** Everything the escrow vests: the cliff amount plus every period. */
export const escrowTotal = (escrow: VestingEscrowAccount): bigint => escrow.cliffUnlockAmount + escrow.amountPerPeriod * escrow.numberOfPeriod;

/** What the escrow has unlocked at unix time `now` (as the program computes it). */
export function unlockedAt(escrow: VestingEscrowAccount, now: bigint): bigint {
  if (now < escrow.cliffTime) return 0n;
  const periods = escrow.frequency === 0n ? escrow.numberOfPeriod : (now - escrow.cliffTime) / escrow.frequency;
  const counted = periods < escrow.numberOfPeriod ? periods : escrow.numberOfPeriod;
  return escrow.cliffUnlockAmount + escrow.amountPerPeriod * counted;
}
