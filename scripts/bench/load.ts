import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

/** Result of a closed-loop HTTP load run. */
export interface LoadResult {
  requestsPerSecond: number;
  requests: number;
  non2xx: number;
}

/**
 * A closed-loop load generator (autocannon-like): `connections` keep-alive connections, each sending
 * the next GET as soon as the previous answer is read, for `durationMs` after a short warm-up.
 */
export async function runLoad(origin: string, path: string, options: { connections: number; durationMs: number; warmupMs?: number }): Promise<LoadResult> {
  const pool = new Pool(origin, { connections: options.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  try {
    let counting = false;
    let stop = false;
    let requests = 0;
    let non2xx = 0;
    const worker = async () => {
      while (!stop) {
        const res = await pool.request({ path, method: 'GET' });
        await res.body.dump();
        if (!counting) continue;
        requests += 1;
        if (res.statusCode < 200 || res.statusCode >= 300) non2xx += 1;
      }
    };
    const workers = Array.from({ length: options.connections }, worker);
    await new Promise((resolve) => setTimeout(resolve, options.warmupMs ?? 1000));
    counting = true;
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, options.durationMs));
    counting = false;
    const seconds = (performance.now() - started) / 1000;
    stop = true;
    await Promise.all(workers);
    return { requestsPerSecond: requests / seconds, requests, non2xx };
  } finally {
    await pool.close();
  }
}
