/**
 * `npm run bench [-- --json FILE] [--only a,b]`: every scenario measured side by side with its
 * baseline in one run on loopback, printed as a table and optionally written as JSON
 * (`{"results": [{name, value, unit, baseline, ratio}]}`). See docs/benchmarks.md.
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { scenarios } from './bench/scenarios.js';
import { formatTable } from './bench/table.js';
import type { BenchRow } from './bench/types.js';

const { values } = parseArgs({ options: { json: { type: 'string' }, only: { type: 'string' } } });
const only = values.only?.split(',').map((s) => s.trim());
const selected = scenarios.filter((s) => !only || only.includes(s.name));
if (selected.length === 0) {
  process.stderr.write(`no scenario matches --only ${values.only}; known: ${scenarios.map((s) => s.name).join(', ')}\n`);
  process.exit(2);
}

/**
 * Every scenario starts from a collected heap, not from the garbage (and the young-generation size
 * V8 grew for it) of the one before: after `delivery-latency`, `isolation`'s no-dead-host side ran
 * ~20 % faster than alone (4216-4237 vs ~3470 deliveries/s) while its dead-host side did not, so the
 * ratio depended on the order of the scenarios (0.80-0.84 after it, 1.02 with a collection between).
 */
async function collectGarbage(): Promise<void> {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  await new Promise((resolve) => setTimeout(resolve, 200));
}

process.stdout.write(`bench: ${cpus().length} cpus (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}\n`);
const rows: BenchRow[] = [];
const started = performance.now();
for (const scenario of selected) {
  await collectGarbage();
  const t = performance.now();
  process.stdout.write(`  ${scenario.name} … `);
  const got = await scenario.run();
  rows.push(...got);
  process.stdout.write(`${((performance.now() - t) / 1000).toFixed(1)} s\n`);
  for (const r of got) process.stdout.write(`    ${r.name}: ${r.value} ${r.unit} (baseline ${r.baseline}, ratio ${r.ratio}) — ${r.note}\n`);
}
process.stdout.write(`\n${formatTable(rows)}\n\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
if (values.json) {
  const results = rows.map(({ name, value, unit, baseline, ratio }) => ({ name, value, unit, baseline, ratio }));
  // npm runs scripts from the package root; a relative path means relative to where npm was invoked.
  const file = resolve(process.env.INIT_CWD ?? process.cwd(), values.json);
  writeFileSync(file, `${JSON.stringify({ results }, null, 2)}\n`);
  process.stdout.write(`wrote ${file}\n`);
}
