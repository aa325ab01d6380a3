import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const fixture = fileURLToPath(new URL('./healthProbeProcess.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Wall-clock ms with sub-ms precision, comparable across processes on one machine. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

/** What a probe saw: every answer's latency and status. */
export interface ProbeResult {
  samples: number[];
  /** Wall-clock span ({@link wallNow}) of each sample, in the same order: sent → answered (or stopped). */
  windows: Array<{ start: number; end: number }>;
  statuses: number[];
  /** Nearest-rank percentile of the latencies (ms). */
  p(percent: number): number;
  max(): number;
  summary(): { n: number; p50: number; p99: number; max: number };
}

export interface HealthProbe {
  /** Starts probing `origin` (the probe process is already running, so the first probe goes out at once). */
  start(origin: string): void;
  /** Wall-clock instant ({@link wallNow}) of the first answer of any status. */
  firstAnswer: Promise<number>;
  /** Stops probing; probes still waiting count with the time they have waited so far. */
  stop(): Promise<ProbeResult>;
}

/**
 * Once started, polls `GET /api/health` every `intervalMs` from a process of its own (healthProbeProcess.ts),
 * as an external monitor does: a new connection each time, not waiting for the previous answer.
 * Refused connections (the port not open yet) are not samples.
 */
export async function createHealthProbe(intervalMs = 100): Promise<HealthProbe> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, String(intervalMs)], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
  const samples: number[] = [];
  const windows: Array<{ start: number; end: number }> = [];
  const statuses: number[] = [];
  let resolveFirst: (at: number) => void = () => undefined;
  const firstAnswer = new Promise<number>((resolve) => (resolveFirst = resolve));
  let onReady: () => void = () => undefined;
  let onWaiting: (waiting: { ms: number[]; at: number }) => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line) as { ready?: true; answer?: { at: number; ms: number; status: number }; waiting?: number[]; at?: number };
    if (msg.ready) onReady();
    if (msg.answer) {
      samples.push(msg.answer.ms);
      windows.push({ start: msg.answer.at - msg.answer.ms, end: msg.answer.at });
      statuses.push(msg.answer.status);
      resolveFirst(msg.answer.at);
    }
    if (msg.waiting) onWaiting({ ms: msg.waiting, at: msg.at ?? wallNow() });
  });
  await ready;
  return {
    start(origin) {
      child.stdin.write(`probe ${origin}\n`);
    },
    firstAnswer,
    async stop() {
      const waiting = await new Promise<{ ms: number[]; at: number }>((resolve) => {
        onWaiting = resolve;
        child.stdin.write('stop\n');
      });
      const all = [...samples, ...waiting.ms];
      const spans = [...windows, ...waiting.ms.map((ms) => ({ start: waiting.at - ms, end: waiting.at }))];
      const sorted = [...all].sort((a, b) => a - b);
      const p = (percent: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((percent / 100) * sorted.length) - 1))] ?? Number.NaN;
      const max = () => sorted[sorted.length - 1] ?? Number.NaN;
      return { samples: all, windows: spans, statuses: [...statuses], p, max, summary: () => ({ n: all.length, p50: Math.round(p(50)), p99: Math.round(p(99)), max: Math.round(max()) }) };
    },
  };
}
