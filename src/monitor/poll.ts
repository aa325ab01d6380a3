import { parsePrometheusText, sumSamples } from '../metrics/parseText.js';
import type { Observation } from './evaluate.js';

/** Request counters from /metrics: all requests and the 5xx ones. */
export interface RequestCounts {
  total: number;
  errors: number;
}

export interface PollTarget {
  /** Base URL of the service, e.g. `http://localhost:8080`. */
  url: string;
  timeoutMs: number;
  metricsToken?: string;
}

/** 5xx share of the requests between two readings of the counters (a restart starts over). */
export function errorRateBetween(previous: RequestCounts | undefined, current: RequestCounts): number {
  const reset = previous !== undefined && current.total < previous.total;
  const base = previous === undefined || reset ? { total: 0, errors: 0 } : previous;
  const total = current.total - base.total;
  return total <= 0 ? 0 : (current.errors - base.errors) / total;
}

/** Reads the request counters; undefined when /metrics cannot be read (refused, absent, down). */
export async function readRequestCounts(target: PollTarget): Promise<RequestCounts | undefined> {
  try {
    const headers: Record<string, string> = target.metricsToken ? { authorization: `Bearer ${target.metricsToken}` } : {};
    const res = await fetch(new URL('/metrics', target.url), { headers, signal: AbortSignal.timeout(target.timeoutMs) });
    if (!res.ok) return undefined;
    const samples = parsePrometheusText(await res.text());
    const name = 'launch_service_http_requests_total';
    return { total: sumSamples(samples, name), errors: sumSamples(samples, name, (l) => (l.status ?? '').startsWith('5')) };
  } catch {
    return undefined;
  }
}

/** One poll of /api/health: status, response time and open breakers; a timeout is its own status. */
export async function pollHealth(target: PollTarget, now: () => number = () => performance.now()): Promise<Omit<Observation, 'errorRate'>> {
  const started = now();
  try {
    const res = await fetch(new URL('/api/health', target.url), { signal: AbortSignal.timeout(target.timeoutMs) });
    const body = (await res.json()) as { status?: unknown; circuitBreakers?: Record<string, { state?: string }> };
    const responseMs = Math.round(now() - started);
    const openBreakers = Object.values(body.circuitBreakers ?? {}).filter((b) => b.state !== undefined && b.state !== 'closed').length;
    return { status: typeof body.status === 'string' ? body.status : `http ${res.status}`, responseMs, openBreakers };
  } catch (error) {
    const responseMs = Math.round(now() - started);
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return { status: timedOut ? 'timeout' : 'unreachable', responseMs: timedOut ? target.timeoutMs : responseMs, openBreakers: 0 };
  }
}
