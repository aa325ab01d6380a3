/** One benchmark result as written to the JSON file (`{"results": [...]}`). */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** The same quantity measured the simple way in the same run. */
  baseline: number;
  /** value / baseline. */
  ratio: number;
}

/** A row of the printed table: the result plus its goal, for humans. */
export interface BenchRow extends BenchResult {
  /** e.g. "ratio ≥ 0.5"; checked by {@link BenchRow.met}. */
  goal: string;
  met: boolean;
  /** Short free-text context (config, counts). */
  note: string;
}

/** Builds a result with its ratio, rounded for reading. */
export function result(name: string, value: number, unit: string, baseline: number): BenchResult {
  const round = (n: number) => (Math.abs(n) >= 100 ? Math.round(n) : Math.round(n * 100) / 100);
  return { name, value: round(value), unit, baseline: round(baseline), ratio: baseline === 0 ? 0 : Math.round((value / baseline) * 1000) / 1000 };
}

/** Nearest-rank percentile of unsorted samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}
