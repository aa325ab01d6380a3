import { readFileSync } from 'node:fs';
import pg from 'pg';

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU milliseconds (user + system) a process has used so far, from /proc; undefined where /proc is not readable. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * Meters the CPU the backends of one PostgreSQL database use, read from /proc (so it needs the server
 * on this machine): the pids are those pg_stat_activity lists for that database, sampled every
 * {@link SAMPLE_MS} through a connection to the server's maintenance database (`url`), so another
 * database's backends (other tests on a shared server) and the server's shared processes (WAL writer,
 * checkpointer, autovacuum launcher) are not counted. A backend seen at `start()` counts from its time
 * then, one that connects later from zero; one that exits counts up to its last sample (at most
 * SAMPLE_MS of it is missed). `stop()` samples once more and returns the total, or undefined when no
 * backend's process could be read.
 */
export async function databaseCpuMeter(url: string, database: string): Promise<{ start(): Promise<void>; stop(): Promise<number | undefined> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const seen = new Map<number, { base: number; last: number }>();
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  let sampling: Promise<void> = Promise.resolve();
  async function sample(): Promise<void> {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
    for (const { pid } of rows) {
      const cpu = processCpuMs(pid);
      if (cpu === undefined) continue;
      const known = seen.get(pid);
      if (known) known.last = cpu;
      else seen.set(pid, { base: started ? 0 : cpu, last: cpu });
    }
  }
  const tick = () => {
    sampling = sampling.then(sample).catch(() => undefined);
  };
  return {
    async start() {
      await sample();
      started = true;
      timer = setInterval(tick, SAMPLE_MS);
    },
    async stop() {
      clearInterval(timer);
      tick();
      await sampling;
      await client.end();
      if (seen.size === 0) return undefined;
      let total = 0;
      for (const { base, last } of seen.values()) total += last - base;
      return total;
    },
  };
}

/** How often {@link databaseCpuMeter} lists the database's backends and reads their CPU. */
const SAMPLE_MS = 100;
