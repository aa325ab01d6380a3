import { afterEach, describe, expect, it } from 'vitest';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { captureLogger } from '../support/webhooks.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type Line = { msg: string; level: number; component?: unknown; launchId?: string; durationMs?: number; mint?: string; path?: string };

describe('the service log', () => {
  it('writes one line when a launch completes, with its id, duration and mint, and answered health probes at debug', async () => {
    const captured = captureLogger();
    t = await startTestService({ logger: captured.logger });
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody() });
    const { launch } = (await res.json()) as { launch: { id: string } };
    expect(await t.service.runner.drain()).toBe(1);
    await t.request('/api/health');

    const lines = captured.lines.map((l) => JSON.parse(l) as Line);
    const done = lines.filter((l) => l.msg === 'launch complete');
    expect(done).toHaveLength(1);
    const mint = ((await (await t.request(`/api/launches/${launch.id}`, { key })).json()) as { launch: { results: { mint: string } } }).launch.results.mint;
    expect(done[0]).toMatchObject({ level: 30, launchId: launch.id, mint });
    expect(done[0]!.durationMs).toBeGreaterThanOrEqual(0);
    const health = lines.filter((l) => l.msg === 'request' && l.path === '/api/health');
    expect(health.map((l) => l.level)).toEqual([20]);
    // A runner line names its component once (pino would write a second "component" key otherwise).
    const runnerLine = captured.lines.find((l) => l.includes('"launch complete"'))!;
    expect(runnerLine.match(/"component":/g)).toHaveLength(1);
  });
});
