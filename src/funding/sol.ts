/** SOL amounts as people write them, and lamports as they are stored (1 SOL = 10^9 lamports). */

const SOL = /^(\d{1,7})(?:\.(\d{1,9}))?$/;

/** `"2.5"` → 2500000000n, exact; undefined for anything but a decimal with at most 9 places (and 7 whole digits). */
export function parseSol(text: string): bigint | undefined {
  const match = SOL.exec(text.trim());
  if (!match) return undefined;
  return BigInt(match[1]!) * 1_000_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/** 2500000000 → `"2.5"`, 1 → `"0.000000001"`: exact, no rounding, no trailing zeros. */
export function formatSol(lamports: number | bigint | string): string {
  const value = BigInt(lamports);
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  const whole = abs / 1_000_000_000n;
  const fraction = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}
