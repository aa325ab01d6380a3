/**
 * Runs one bench scenario (argv[2]) in a process of its own and prints its rows as one JSON line
 * `{"rows": [...]}` on stdout; anything else it prints (progress, the postgres skip line) passes
 * through. Started by scripts/bench.ts for every scenario.
 */
import { scenarios } from './scenarios.js';

const scenario = scenarios.find((s) => s.name === process.argv[2]);
if (!scenario) {
  process.stderr.write(`unknown scenario ${process.argv[2]}\n`);
  process.exit(2);
}
const rows = await scenario.run();
process.stdout.write(`\n${JSON.stringify({ rows })}\n`);
// Scenarios close what they open; a stray handle must not keep the run waiting.
process.exit(0);
