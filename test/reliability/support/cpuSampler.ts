import { readFileSync } from 'node:fs';
import { wallNow } from './healthProbe.js';

/** CPU time (ms, all threads) a process has used so far, from /proc (Linux); undefined elsewhere or once it exited. */
export function cpuMsOf(pid: number | undefined): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100/s)
  } catch {
    return undefined;
  }
}

/**
 * The main thread's (the event loop's) time on a CPU and time waiting on the run queue for one, in
 * ms, from /proc/<pid>/schedstat (Linux); undefined elsewhere.
 */
export function schedMsOf(pid: number | undefined): { run: number; wait: number } | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
    return run === undefined || wait === undefined || Number.isNaN(run) || Number.isNaN(wait) ? undefined : { run: run / 1e6, wait: wait / 1e6 };
  } catch {
    return undefined;
  }
}

/** CPU a process used over time, sampled from /proc. */
export interface CpuSampler {
  /** False where /proc is not available: then nothing below means anything. */
  readonly available: boolean;
  /**
   * CPU ms its event loop (the main thread) used between two wall-clock instants ({@link wallNow}),
   * interpolated between samples; all threads together where /proc/<pid>/schedstat is missing.
   */
  cpuBetween(start: number, end: number): number;
  /**
   * The share of the CPU time its event loop asked for that it got between two instants: time on a
   * CPU / (time on a CPU + time waiting for one). 1 on a machine of its own, whether busy or idle;
   * low when other processes kept it off the cores. 1 where /proc/<pid>/schedstat is missing.
   */
  grantedBetween(start: number, end: number): number;
  stop(): void;
}

/**
 * Samples a process's CPU time every `intervalMs` (the event loop's own where the kernel reports
 * it per thread, so the WAL checkpointer and the garbage collector's helper threads do not count). What a health request waited for can then be told
 * apart: CPU the service spent on other work meanwhile (its own doing), or a machine that gave the
 * service no core (time during which the service used no CPU at all).
 */
export function sampleCpu(pid: number | undefined, intervalMs = 50): CpuSampler {
  const points: Array<{ wall: number; cpu: number; run: number; wait: number }> = [];
  const take = () => {
    const sched = schedMsOf(pid);
    const cpu = sched?.run ?? cpuMsOf(pid);
    if (cpu !== undefined) points.push({ wall: wallNow(), cpu, run: sched?.run ?? 0, wait: sched?.wait ?? 0 });
  };
  take();
  const timer = setInterval(take, intervalMs);
  const at = (wall: number, field: 'cpu' | 'run' | 'wait'): number => {
    if (points.length === 0) return 0;
    const first = points[0]!;
    if (wall <= first.wall) return first[field];
    for (let i = 1; i < points.length; i++) {
      const b = points[i]!;
      if (wall > b.wall) continue;
      const a = points[i - 1]!;
      return a[field] + ((b[field] - a[field]) * (wall - a.wall)) / Math.max(1e-9, b.wall - a.wall);
    }
    return points[points.length - 1]![field];
  };
  return {
    available: points.length > 0,
    cpuBetween: (start, end) => Math.max(0, at(end, 'cpu') - at(start, 'cpu')),
    grantedBetween(start, end) {
      const run = Math.max(0, at(end, 'run') - at(start, 'run'));
      const wait = Math.max(0, at(end, 'wait') - at(start, 'wait'));
      return run + wait > 0 ? run / (run + wait) : 1;
    },
    stop() {
      take();
      clearInterval(timer);
    },
  };
}
