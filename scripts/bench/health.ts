import { request } from 'undici';
import { spawnBenchChild } from './child.js';
import { SERVICE_NODE_FLAGS } from '../serviceNodeFlags.js';
import { runLoad } from './load.js';
import { roundsResult, type BenchResult } from './types.js';

const CONNECTIONS = 32;

async function loadChild(mode: 'service' | 'bare', durationMs: number, env: Record<string, string> = {}) {
  const server = await spawnBenchChild<{ port: number }>('healthServer.ts', [mode], env, [...SERVICE_NODE_FLAGS]);
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

/** `health`: GET /api/health of the real server vs a bare node:http server answering the same JSON, three rounds back to back; medians (see roundsResult). */
export async function benchHealth(durationMs = 5000): Promise<{ result: BenchResult; note: string }> {
  const rounds: Array<{ value: number; baseline: number }> = [];
  for (let round = 0; round < 3; round++) {
    const service = await loadChild('service', durationMs);
    const baseline = await loadChild('bare', durationMs, { BENCH_HEALTH_BODY: service.body, BENCH_HEALTH_HEADERS: JSON.stringify(service.headers) });
    rounds.push({ value: service.requestsPerSecond, baseline: baseline.requestsPerSecond });
  }
  const ratios = rounds.map((r) => (r.value / r.baseline).toFixed(2)).join(' / ');
  return {
    result: roundsResult('health', rounds, 'requests/s'),
    note: `${CONNECTIONS} keep-alive connections, ${durationMs / 1000} s per run, server in its own process; the bare server answers the same body and headers; three rounds back to back, medians, round ratios ${ratios}`,
  };
}
