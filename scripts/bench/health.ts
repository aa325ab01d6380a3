import { request } from 'undici';
import { spawnBenchChild } from './child.js';
import { runLoad } from './load.js';
import { result, type BenchResult } from './types.js';

const CONNECTIONS = 32;

async function loadChild(mode: 'service' | 'bare', durationMs: number, env: Record<string, string> = {}) {
  const server = await spawnBenchChild<{ port: number }>('healthServer.ts', [mode], env);
  try {
    const origin = `http://127.0.0.1:${server.first.port}`;
    const sample = await request(`${origin}/api/health`);
    const body = await sample.body.text();
    // The same header set too, so the load generator parses identical responses from both servers.
    const skip = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
    const headers = Object.fromEntries(Object.entries(sample.headers).filter(([name, value]) => !skip.has(name) && typeof value === 'string'));
    const load = await runLoad(origin, '/api/health', { connections: CONNECTIONS, durationMs });
    if (load.non2xx > 0) throw new Error(`${mode} health answered ${load.non2xx} non-2xx responses`);
    return { ...load, body, headers };
  } finally {
    await server.stop();
  }
}

/** `health`: GET /api/health of the real server vs a bare node:http server answering the same JSON. */
export async function benchHealth(durationMs = 5000): Promise<{ result: BenchResult; note: string }> {
  let real = 0;
  let bare = 0;
  for (let round = 0; round < 2; round++) {
    const service = await loadChild('service', durationMs);
    real = Math.max(real, service.requestsPerSecond);
    const baseline = await loadChild('bare', durationMs, { BENCH_HEALTH_BODY: service.body, BENCH_HEALTH_HEADERS: JSON.stringify(service.headers) });
    bare = Math.max(bare, baseline.requestsPerSecond);
  }
  return { result: result('health', real, 'requests/s', bare), note: `${CONNECTIONS} keep-alive connections, ${durationMs / 1000} s per run, server in its own process; the bare server answers the same body and headers` };
}
