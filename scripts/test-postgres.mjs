// `npm test`'s PostgreSQL half (docs/architecture.md, SQLite and PostgreSQL): the database-backed tests again, on the PostgreSQL server
// TEST_DATABASE_URL names (each test file makes its own databases there and drops them). `.ci/run`
// starts a throwaway server and sets it; without it this half is skipped, saying so.
import { spawnSync } from 'node:child_process';

const url = process.env.TEST_DATABASE_URL;
if (!url) {
  process.stdout.write('\nPostgreSQL half of the suite skipped: TEST_DATABASE_URL is not set (.ci/run starts a throwaway PostgreSQL server and sets it).\n');
  process.exit(0);
}
// Every test that uses the database through test/support; tests of SQLite-only parts (the
// checkpointer, the writer lock, the embedded chain's store) and process tests stay in the SQLite half;
// the PostgreSQL-only tests (wake-ups, three instances, the frozen instance) run here only; the bad-input probe runs in
// both (PostgreSQL refuses text SQLite stores), as do the fault-injecting receiver, the SIGKILL loop, the SIGSTOP
// freeze and the burst (here on a database of the server and `npm run chain`, with short leases and fewer rounds
// and launches: test/reliability/support/backend.ts); and the service on PostgreSQL launching on `npm run chain`
// (chainProcess) runs in both.
const PATHS = ['test/webhooks', 'test/launches', 'test/funding', 'test/deadLetters', 'test/http', 'test/dashboard', 'test/watcher', 'test/metrics', 'test/retention', 'test/db/postgres.test.ts', 'test/db/wakeups.test.ts', 'test/db/compiledQuery.test.ts', 'test/db/concurrentMigrations.test.ts', 'test/db/preparedStatements.test.ts', 'test/reliability/instances.test.ts', 'test/reliability/zombie.test.ts', 'test/reliability/badInput.test.ts', 'test/reliability/faults.test.ts', 'test/reliability/sigkill.test.ts', 'test/reliability/sigstop.test.ts', 'test/reliability/burst.test.ts', 'test/chain/chainProcess.test.ts'];
process.stdout.write(`\nPostgreSQL half of the suite: ${PATHS.join(' ')}\n`);
const run = spawnSync('npx', ['vitest', 'run', ...PATHS], { stdio: 'inherit', env: { ...process.env, TEST_DATABASE_URL: url } });
process.exit(run.status ?? 1);
