import { readdirSync, readFileSync } from 'node:fs';
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

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * The CPU milliseconds the PostgreSQL server at `url` has used so far: its postmaster and every
 * process it started (backends, WAL writer, checkpointer …), read from /proc, so it needs the server
 * on this machine. A backend that exits between two readings takes its time with it: read while the
 * pools measured are still open. Undefined when the server's processes cannot be read.
 */
export async function postgresCpuReader(url: string): Promise<() => number | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let postmaster: number | undefined;
  try {
    const backend = Number((await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid);
    postmaster = parentOf(backend);
  } finally {
    await client.end();
  }
  if (postmaster === undefined || processCpuMs(postmaster) === undefined) return () => undefined;
  const server = postmaster;
  return () => {
    let total = processCpuMs(server) ?? 0;
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (Number.isInteger(pid) && parentOf(pid) === server) total += processCpuMs(pid) ?? 0;
    }
    return total;
  };
}
