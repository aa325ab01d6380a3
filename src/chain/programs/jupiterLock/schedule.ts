/** Jupiter Lock `CreateVestingEscrowParameters`, all in the program's units (seconds, raw token amounts). */
export interface VestingEscrowParams {
  vestingStartTime: bigint;
  cliffTime: bigint;
  frequency: bigint;
  cliffUnlockAmount: bigint;
  amountPerPeriod: bigint;
  numberOfPeriod: bigint;
  updateRecipientMode: number;
  cancelMode: number;
}

/** Who may change the recipient / cancel an escrow (Jupiter Lock's `UpdateRecipientMode`/`CancelMode`). */
export const EscrowMode = {
  neither: 0,
  onlyCreator: 1,
  onlyRecipient: 2,
  either: 3,
} as const;

/** What the launch request says about vesting (docs/api.md `vesting`). */
export interface VestingRequest {
  cliffSeconds: number;
  periodSeconds: number;
  periods: number;
  /** Whole percent of the vesting allocation that unlocks at the cliff (Jupiter Lock's `cliff_unlock_amount`); absent = 0. */
  cliffUnlockPercent?: number | undefined;
}

/**
 * The escrow schedule for `amount` raw tokens: cliff = start + cliffSeconds, one unlock every
 * periodSeconds after the cliff. `floor(amount × cliffUnlockPercent / 100)` unlocks at the cliff,
 * the rest is divided into `periods` equal whole amounts, and what that division leaves over unlocks
 * at the cliff too, so cliff amount + periods × per-period is exactly `amount` (integer math, no
 * rounding). With `periods = 0` the whole amount unlocks at the cliff. The recipient may move the
 * escrow to a new wallet; nobody can cancel it — a promise to a beneficiary should not be revocable
 * by the launcher.
 */
export function deriveVestingSchedule(amount: bigint, startTime: bigint, request: VestingRequest): VestingEscrowParams {
  const { cliffSeconds, periodSeconds, periods, cliffUnlockPercent = 0 } = request;
  if (amount <= 0n) throw new RangeError('vesting amount must be positive');
  for (const [name, value] of Object.entries({ cliffSeconds, periodSeconds, periods, cliffUnlockPercent })) {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer`);
  }
  if (cliffUnlockPercent > 100) throw new RangeError('cliffUnlockPercent must be at most 100');
  if (periods > 0 && periodSeconds === 0) throw new RangeError('periodSeconds must be positive when periods > 0');
  const numberOfPeriod = BigInt(periods);
  const afterCliff = amount - cliffShare(amount, cliffUnlockPercent);
  const amountPerPeriod = numberOfPeriod === 0n ? 0n : afterCliff / numberOfPeriod;
  return {
    vestingStartTime: startTime,
    cliffTime: startTime + BigInt(cliffSeconds),
    // Builds before April 2025 reject frequency 0 even without periods; 1 s is harmless then.
    frequency: BigInt(periods === 0 ? Math.max(1, periodSeconds) : periodSeconds),
    cliffUnlockAmount: amount - amountPerPeriod * numberOfPeriod,
    amountPerPeriod,
    numberOfPeriod,
    updateRecipientMode: EscrowMode.onlyRecipient,
    cancelMode: EscrowMode.neither,
  };
}

/** The share of `amount` a whole `percent` unlocks at the cliff, rounded down (the periods' remainder joins it). */
export function cliffShare(amount: bigint, percent = 0): bigint {
  return (amount * BigInt(percent)) / 100n;
}

/** Total tokens the program moves into the escrow for these params. */
export function totalDeposit(params: VestingEscrowParams): bigint {
  return params.cliffUnlockAmount + params.amountPerPeriod * params.numberOfPeriod;
}

/** The schedule fields of an escrow and what its recipient has claimed (a decoded `VestingEscrow`). */
export interface EscrowProgress {
  cliffTime: bigint;
  frequency: bigint;
  cliffUnlockAmount: bigint;
  amountPerPeriod: bigint;
  numberOfPeriod: bigint;
  totalClaimedAmount: bigint;
}

/** What Jupiter Lock has unlocked at `nowSeconds`: nothing before the cliff, then the cliff amount and one amount per whole period after it. */
export function unlockedAt(escrow: EscrowProgress, nowSeconds: bigint): bigint {
  if (nowSeconds < escrow.cliffTime) return 0n;
  const periods = escrow.frequency === 0n ? escrow.numberOfPeriod : (nowSeconds - escrow.cliffTime) / escrow.frequency;
  return escrow.cliffUnlockAmount + (periods < escrow.numberOfPeriod ? periods : escrow.numberOfPeriod) * escrow.amountPerPeriod;
}

/**
 * What a claim at `nowSeconds` would move (unlocked less claimed), and the next time more unlocks
 * (undefined once everything has): a claim before then moves nothing.
 */
export function claimableAt(escrow: EscrowProgress, nowSeconds: bigint): { claimable: bigint; next: { at: bigint; amount: bigint } | undefined } {
  const now = unlockedAt(escrow, nowSeconds);
  const candidates = [escrow.cliffTime];
  if (nowSeconds >= escrow.cliffTime && escrow.frequency > 0n) candidates.push(escrow.cliffTime + ((nowSeconds - escrow.cliffTime) / escrow.frequency + 1n) * escrow.frequency);
  else if (escrow.frequency > 0n) candidates.push(escrow.cliffTime + escrow.frequency);
  const at = candidates.filter((t) => t > nowSeconds).find((t) => unlockedAt(escrow, t) > now);
  return { claimable: now - escrow.totalClaimedAmount, next: at === undefined ? undefined : { at, amount: unlockedAt(escrow, at) - now } };
}
