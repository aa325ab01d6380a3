/**
 * `npm run bench [-- --json FILE] [--only a,b]`: every scenario measured side by side with its
 * baseline in one run on loopback, printed as a table and optionally written as JSON
 * (`{"results": [{name, value, unit, baseline, ratio}]}`). See docs/benchmarks.md.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { scenarios } from './bench/scenarios.js';
import { SERVICE_NODE_FLAGS } from './serviceNodeFlags.js';
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
 * Every scenario runs in a fresh process (scenarioChild.ts), so none inherits the heap, the
 * young-generation size V8 grew, the JIT state or the stray timers of the one before. In one process
 * the order of the scenarios showed in the numbers: after `delivery-latency`, `isolation`'s
 * no-dead-host side ran ~20 % faster than alone (4216-4237 vs ~3470 deliveries/s); after `health`
 * (its load generator pushed ~900 000 requests through this heap), `delivery-latency`'s p99 was
 * 11-16 ms against 6-8 ms alone, the dispatcher then running under a mark-compact every ~2.5 s. A
 * full collection between scenarios (the earlier remedy) fixed the first and not the second.
 * The process runs with the service's V8 flags (scripts/serviceNodeFlags.ts), as `npm start` does.
 */
function runScenario(name: string): Promise<BenchRow[]> {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', fileURLToPath(new URL('./bench/scenarioChild.ts', import.meta.url)), name], {
    cwd: fileURLToPath(new URL('../', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let rows: BenchRow[] | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line.startsWith('{"rows":')) rows = (JSON.parse(line) as { rows: BenchRow[] }).rows;
    else if (line !== '') process.stdout.write(`${line} `);
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (rows && code === 0 ? resolve(rows) : reject(new Error(`scenario ${name} exited with code ${code} without its rows`))));
  });
}

process.stdout.write(`bench: ${cpus().length} cpus (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}\n`);
const rows: BenchRow[] = [];
const started = performance.now();
for (const scenario of selected) {
  const t = performance.now();
  process.stdout.write(`  ${scenario.name} … `);
  const got = await runScenario(scenario.name);
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
