import { describe, expect, it } from 'vitest';
import { evaluate, type Observation } from '../../src/monitor/evaluate.js';
import { errorRateBetween } from '../../src/monitor/poll.js';
import { PRESETS } from '../../src/monitor/presets.js';

const healthy: Observation = { status: 'healthy', responseMs: 20, errorRate: 0, openBreakers: 0 };

describe('monitor thresholds', () => {
  it('polls every 30 s / 60 s / 5 min with a 10 s / 15 s / 30 s timeout', () => {
    expect(PRESETS.production).toEqual({ intervalMs: 30_000, timeoutMs: 10_000 });
    expect(PRESETS.staging).toEqual({ intervalMs: 60_000, timeoutMs: 15_000 });
    expect(PRESETS.development).toEqual({ intervalMs: 300_000, timeoutMs: 30_000 });
  });

  it.each([
    [{}, 'ok'],
    [{ status: 'degraded' }, 'warning'],
    [{ status: 'unhealthy' }, 'critical'],
    [{ status: 'timeout', responseMs: 10_000 }, 'critical'],
    [{ status: 'unreachable' }, 'critical'],
    [{ responseMs: 2000 }, 'ok'],
    [{ responseMs: 2001 }, 'warning'],
    [{ responseMs: 5000 }, 'warning'],
    [{ responseMs: 5001 }, 'critical'],
    [{ errorRate: 0.01 }, 'ok'],
    [{ errorRate: 0.0101 }, 'warning'],
    [{ errorRate: 0.05 }, 'warning'],
    [{ errorRate: 0.0501 }, 'critical'],
    [{ errorRate: null }, 'ok'],
    [{ openBreakers: 1 }, 'warning'],
    [{ openBreakers: 2 }, 'warning'],
    [{ openBreakers: 3 }, 'critical'],
    [{ status: 'degraded', openBreakers: 3 }, 'critical'],
  ] as Array<[Partial<Observation>, string]>)('%j is %s', (change, level) => {
    const verdict = evaluate({ ...healthy, ...change });
    expect(verdict.level).toBe(level);
    expect(verdict.reasons.length > 0).toBe(level !== 'ok');
  });

  it('computes the 5xx share since the previous reading, and starts over after a restart', () => {
    expect(errorRateBetween(undefined, { total: 200, errors: 4 })).toBe(0.02);
    expect(errorRateBetween({ total: 200, errors: 4 }, { total: 300, errors: 9 })).toBe(0.05);
    expect(errorRateBetween({ total: 300, errors: 9 }, { total: 300, errors: 9 })).toBe(0);
    expect(errorRateBetween({ total: 300, errors: 9 }, { total: 10, errors: 1 })).toBe(0.1);
  });
});

describe('docs/alerts.yml', () => {
  it('carries the monitor thresholds', async () => {
    const { readFileSync } = await import('node:fs');
    const { THRESHOLDS } = await import('../../src/monitor/presets.js');
    const rules = readFileSync(new URL('../../docs/alerts.yml', import.meta.url), 'utf8');
    const exprs = [...rules.matchAll(/expr: (.*)/g)].map((m) => m[1] ?? '');
    const find = (part: string, tail: string) => exprs.some((e) => e.includes(part) && e.trimEnd().endsWith(tail));
    expect(find('status=~"5.."', `> ${THRESHOLDS.errorRate.warning}`)).toBe(true);
    expect(find('status=~"5.."', `> ${THRESHOLDS.errorRate.critical}`)).toBe(true);
    expect(find('route="/api/health"', `> ${THRESHOLDS.responseMs.warning / 1000}`)).toBe(true);
    expect(find('route="/api/health"', `> ${THRESHOLDS.responseMs.critical / 1000}`)).toBe(true);
    expect(find('launch_service_breakers', `>= ${THRESHOLDS.openBreakers.warning}`)).toBe(true);
    expect(find('launch_service_breakers', `>= ${THRESHOLDS.openBreakers.critical}`)).toBe(true);
    expect(find('launch_service_health_status', '== 1')).toBe(true);
    expect(find('launch_service_health_status', '== 2')).toBe(true);
  });
});
