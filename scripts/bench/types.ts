import { percentile as nearestRank } from '../../src/lib/percentile.js';

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

/** Nearest-rank percentile of unsorted samples (NaN when there are none). */
export function percentile(samples: number[], p: number): number {
  return nearestRank([...samples].sort((a, b) => a - b), p) ?? Number.NaN;
}

/** Median of samples (the mean of the middle two for an even count). */
export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

/**
 * A result measured in alternating rounds (value then baseline, back to back): the medians of each,
 * and as ratio the median of the rounds' own ratios, so a machine whose load drifts between rounds
 * does not pair a lucky baseline with an unlucky value.
 */
export function roundsResult(name: string, rounds: Array<{ value: number; baseline: number }>, unit: string): BenchResult {
  const base = result(name, median(rounds.map((r) => r.value)), unit, median(rounds.map((r) => r.baseline)));
  return { ...base, ratio: Math.round(median(rounds.map((r) => (r.baseline === 0 ? 0 : r.value / r.baseline))) * 1000) / 1000 };
}
