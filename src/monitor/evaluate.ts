import { THRESHOLDS } from './presets.js';

export type Level = 'ok' | 'warning' | 'critical';

/** What one poll saw. */
export interface Observation {
  /** `healthy|degraded|unhealthy` from /api/health, or `timeout` / `unreachable`. */
  status: string;
  responseMs: number;
  /** 5xx share since the previous poll; null when /metrics could not be read. */
  errorRate: number | null;
  openBreakers: number;
}

/** One line of monitor output (README.md, Operations). */
export interface Verdict extends Observation {
  level: Level;
  reasons: string[];
}

const rank: Record<Level, number> = { ok: 0, warning: 1, critical: 2 };
const pct = (x: number) => `${(x * 100).toFixed(2)}%`;

/** Applies the thresholds; the worst level wins and every crossed threshold is a reason. */
export function evaluate(o: Observation): Verdict {
  let level: Level = 'ok';
  const reasons: string[] = [];
  const raise = (to: Level, reason: string) => {
    if (rank[to] > rank[level]) level = to;
    reasons.push(reason);
  };
  if (o.status === 'timeout') raise('critical', `health did not answer within ${o.responseMs} ms`);
  else if (o.status === 'unreachable') raise('critical', 'health endpoint unreachable');
  else if (o.status === 'unhealthy') raise('critical', 'status unhealthy');
  else if (o.status === 'degraded') raise('warning', 'status degraded');
  else if (o.status !== 'healthy') raise('critical', `unexpected status "${o.status}"`);
  const { responseMs, errorRate, openBreakers } = THRESHOLDS;
  if (o.status !== 'timeout' && o.status !== 'unreachable') {
    if (o.responseMs > responseMs.critical) raise('critical', `response time ${o.responseMs} ms > ${responseMs.critical} ms`);
    else if (o.responseMs > responseMs.warning) raise('warning', `response time ${o.responseMs} ms > ${responseMs.warning} ms`);
  }
  if (o.errorRate !== null) {
    if (o.errorRate > errorRate.critical) raise('critical', `error rate ${pct(o.errorRate)} > ${pct(errorRate.critical)}`);
    else if (o.errorRate > errorRate.warning) raise('warning', `error rate ${pct(o.errorRate)} > ${pct(errorRate.warning)}`);
  }
  if (o.openBreakers >= openBreakers.critical) raise('critical', `${o.openBreakers} open circuit breakers >= ${openBreakers.critical}`);
  else if (o.openBreakers >= openBreakers.warning) raise('warning', `${o.openBreakers} open circuit breaker(s) >= ${openBreakers.warning}`);
  return { level, status: o.status, responseMs: o.responseMs, errorRate: o.errorRate, openBreakers: o.openBreakers, reasons };
}

export const EXIT_CODES: Record<Level, number> = { ok: 0, warning: 1, critical: 2 };
