/** Bytes of account metadata the runtime charges rent for on top of the data. */
const ACCOUNT_STORAGE_OVERHEAD = 128n;
/** Default cluster rent: 3480 lamports per byte-year, exempt at 2 years. */
const LAMPORTS_PER_BYTE_YEAR = 3480n;
const EXEMPTION_YEARS = 2n;

/**
 * Rent-exempt minimum for an account of `dataLength` bytes under the default rent every public
 * cluster and LiteSVM use (same formula as `getMinimumBalanceForRentExemption`).
 */
export function rentExemptLamports(dataLength: number): bigint {
  return (ACCOUNT_STORAGE_OVERHEAD + BigInt(dataLength)) * LAMPORTS_PER_BYTE_YEAR * EXEMPTION_YEARS;
}
