import { benchBacklog } from './backlog.js';
import { benchBurst } from './burst.js';
import { benchDashboard } from './dashboard.js';
import { benchDispatch, benchDispatchHosts } from './dispatch.js';
import { benchFairness } from './fairness.js';
import { benchFanout } from './fanout.js';
import { benchFlaky } from './flaky.js';
import { benchHealth } from './health.js';
import { benchIsolation } from './isolation.js';
import { benchLatency } from './latency.js';
import { benchPipeline } from './pipeline.js';
import { benchPostgres, benchPostgresPipeline } from './postgres.js';
import { benchSoak } from './soak.js';
import type { BenchResult, BenchRow } from './types.js';
import { benchTracing } from './tracing.js';
import { benchWatch } from './watch.js';

/** A named scenario: runs its measurement(s) and judges each result against its goal. */
export interface Scenario {
  name: string;
  run(): Promise<BenchRow[]>;
}

type Goal = { text: string; met(r: BenchResult): boolean };

const goals: Record<string, Goal> = {
  // Guards (no regression): on two cores the bound is the shared loop and the raw POSTs' swing (docs/benchmarks.md).
  dispatch: { text: 'ratio ≥ 0.4', met: (r) => r.ratio >= 0.4 },
  'dispatch-20x8': { text: '(reported)', met: () => true },
  health: { text: 'ratio ≥ 0.7', met: (r) => r.ratio >= 0.7 },
  'burst-health-p99': { text: '< 2000 ms', met: (r) => r.value < 2000 },
  'burst-breaker-openings': { text: '= 0', met: (r) => r.value === 0 },
  'burst-failed-attempts': { text: '= 0', met: (r) => r.value === 0 },
  'burst-restart-startup': { text: '(reported)', met: () => true },
  'burst-restart-first-health': { text: '< 2000 ms', met: (r) => r.value < 2000 },
  'burst-restart-health-p99': { text: '< 2000 ms', met: (r) => r.value < 2000 },
  'delivery-latency-p99': { text: '≤ 10 ms', met: (r) => r.value <= 10 },
  'delivery-latency-p50': { text: '(reported)', met: () => true },
  isolation: { text: 'ratio ≥ 0.9', met: (r) => r.ratio >= 0.9 },
  // Owner B's events while owner A's slow-but-successful receivers keep A's share of the slots busy.
  'fair-share-b-p99': { text: '< 2000 ms', met: (r) => r.value < 2000 },
  'fair-share-b-p50': { text: '(reported)', met: () => true },
  // An event to 21 destinations (20 endpoints, the default bound, and the launch's URL) against 1.
  'fanout-record-20': { text: '(reported)', met: () => true },
  'fanout-record-per-delivery': { text: '(reported)', met: () => true },
  'fanout-drain-20': { text: '(reported)', met: () => true },
  'fanout-record-20-pg': { text: '(reported)', met: () => true },
  'fanout-record-per-delivery-pg': { text: '(reported)', met: () => true },
  'fanout-drain-20-pg': { text: '(reported)', met: () => true },
  'backlog-memory': { text: '< 300 MB', met: (r) => r.value < 300 },
  pipeline: { text: 'ratio ≥ 0.55', met: (r) => r.ratio >= 0.55 },
  'pipeline-thread': { text: 'ratio ≥ 0.7', met: (r) => r.ratio >= 0.7 },
  'pipeline-service-cpu': { text: '(reported)', met: () => true },
  'pipeline-chain-thread': { text: '(reported)', met: () => true },
  'pipeline-service': { text: '(reported)', met: () => true },
  'dashboard-page-p95-worst': { text: '< 100 ms', met: (r) => r.value < 100 },
  'watch-idle-reads-per-minute': { text: 'ratio ≤ 0.05', met: (r) => r.ratio <= 0.05 },
  // One watcher turn (WATCH_POLL_INTERVAL, 2 s) plus the delivery, with the chain's wake-ups.
  'watch-event-latency-p99': { text: '≤ 3000 ms', met: (r) => r.value <= 3000 },
  'watch-event-latency-p50': { text: '(reported)', met: () => true },
  'watch-reads-per-event': { text: '(reported)', met: () => true },
  'dispatch-pg-peer': { text: '(reported)', met: () => true },
  'dispatch-pg-peer-default': { text: '(reported)', met: () => true },
  'dispatch-pg-1': { text: 'ratio ≥ 1.0', met: (r) => r.ratio >= 1 },
  'dispatch-pg-2': { text: '(reported)', met: () => true },
  'dispatch-pg-1-sqlite': { text: 'ratio ≥ 0.5', met: (r) => r.ratio >= 0.5 },
  'dispatch-pg-2-vs-1': { text: 'ratio ≥ 1.0', met: (r) => r.ratio >= 1 },
  'dispatch-pg-1-cpu': { text: 'ratio ≤ 1.0', met: (r) => r.ratio <= 1 },
  'dispatch-pg-2-cpu': { text: '(reported)', met: () => true },
  'pipeline-pg-1': { text: '(reported)', met: () => true },
  'pipeline-pg-2': { text: '(reported)', met: () => true },
  // Twelve launches through every fault kind at once (docs/benchmarks.md, `flaky`).
  'flaky-clean-p50': { text: '(reported)', met: () => true },
  'flaky-clean-max': { text: '(reported)', met: () => true },
  'flaky-p50': { text: '≤ 10000 ms', met: (r) => r.value <= 10_000 },
  'flaky-max': { text: '≤ 30000 ms', met: (r) => r.value <= 30_000 },
  'flaky-complete': { text: 'all, exact supply', met: (r) => r.value === r.baseline },
  'flaky-fault-kinds': { text: 'all injected', met: (r) => r.value === r.baseline },
  // Claims after a simulated month of history and retention, against day 1's.
  'soak-day1': { text: '(reported)', met: () => true },
  'soak-day30': { text: 'ratio ≥ 0.8', met: (r) => r.ratio >= 0.8 },
  // Tracing off (no OTLP endpoint): its hooks take under 0.1 % of a delivery, and no SDK module is loaded.
  'tracing-off-hooks': { text: 'ratio ≤ 0.001', met: (r) => r.ratio <= 0.001 },
  'tracing-off-sdk-modules': { text: '= 0', met: (r) => r.value === 0 && r.baseline > 0 },
  'tracing-on-dispatch': { text: '(reported)', met: () => true },
};

function rows(results: BenchResult[], note: string): BenchRow[] {
  return results.map((r) => {
    const goal = goals[r.name] ?? { text: '', met: () => true };
    return { ...r, goal: goal.text, met: goal.met(r), note };
  });
}

/** Every scenario in run order, sized so the whole run takes about three minutes on two cores. */
export const scenarios: Scenario[] = [
  { name: 'dispatch', run: async () => (({ result, note }) => rows([result], note))(await benchDispatch(5000, 8000)) },
  { name: 'dispatch-20x8', run: async () => (({ result, note }) => rows([result], note))(await benchDispatchHosts(20, 8, 10_000, 10_000)) },
  { name: 'health', run: async () => (({ result, note }) => rows([result], note))(await benchHealth(5000)) },
  { name: 'delivery-latency', run: async () => (({ results, note }) => rows(results, note))(await benchLatency(500, 8000)) },
  { name: 'isolation', run: async () => (({ result, note }) => rows([result], note))(await benchIsolation(5000)) },
  { name: 'fair-share', run: async () => (({ results, note }) => rows(results, note))(await benchFairness(20, 250)) },
  { name: 'fanout', run: async () => (({ results, note }) => rows(results, note))(await benchFanout(20, 500)) },
  { name: 'backlog-memory', run: async () => (({ result, note }) => rows([result], note))(await benchBacklog(100_000, 5000)) },
  { name: 'pipeline', run: async () => (({ results, note }) => rows(results, note))(await benchPipeline(100)) },
  { name: 'flaky', run: async () => (({ results, note }) => rows(results, note))(await benchFlaky(12)) },
  { name: 'watch', run: async () => (({ results, note }) => rows(results, note))(await benchWatch(1000, 20)) },
  { name: 'burst', run: async () => (({ results, note }) => rows(results, note))(await benchBurst(Number(process.env.BENCH_BURST_LAUNCHES ?? 2000))) },
  {
    name: 'postgres',
    run: async () => {
      const { results, note } = await benchPostgres(3000, 10_000);
      if (results.length === 0) process.stdout.write(`(postgres ${note}) `);
      return rows(results, note);
    },
  },
  {
    name: 'postgres-pipeline',
    run: async () => {
      const { results, note } = await benchPostgresPipeline(60);
      if (results.length === 0) process.stdout.write(`(postgres-pipeline ${note}) `);
      return rows(results, note);
    },
  },
  { name: 'soak', run: async () => (({ results, note }) => rows(results, note))(await benchSoak()) },
  { name: 'tracing', run: async () => (({ results, note }) => rows(results, note))(await benchTracing(5000, 8000)) },
  { name: 'dashboard', run: async () => (({ results, note }) => rows(results, note))(await benchDashboard(10_000, 10, 20)) },
];
