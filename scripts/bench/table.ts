import type { BenchRow } from './types.js';

/** The results as a fixed-width text table (also valid Markdown). */
export function formatTable(rows: BenchRow[]): string {
  const header = ['scenario', 'value', 'baseline', 'ratio', 'goal', 'met'];
  const body = rows.map((r) => [r.name, `${r.value} ${r.unit}`, `${r.baseline} ${r.unit}`, String(r.ratio), r.goal, r.met ? 'yes' : 'NO']);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}
