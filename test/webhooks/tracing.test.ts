import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../packages/webhooks/src/index.js';
import { loadConfig } from '../../src/config/config.js';
import { systemClock } from '../../src/lib/clock.js';
import { tracingOn } from '../../src/lib/tracing.js';
import { launchBody, TOKEN_LAUNCH_EVENTS } from '../support/fixtures.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpReceiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';

const SECRET = 'whsec_tracing_0123456789';
type Json = Record<string, any>;

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The spans of one trace as a tree: each span's parent must be in it, or be the caller's span. */
function byId(spans: ReceivedSpan[]): Map<string, ReceivedSpan> {
  return new Map(spans.map((s) => [s.spanId, s]));
}

/** The names of a span's ancestors, nearest first, up to the request's. */
function ancestry(span: ReceivedSpan, ids: Map<string, ReceivedSpan>): string[] {
  const names: string[] = [];
  for (let p = ids.get(span.parentSpanId); p; p = ids.get(p.parentSpanId)) names.push(p.name);
  return names;
}

describe('tracing over OTLP/HTTP', () => {
  let t: TestService | undefined;
  let webhook: Receiver | undefined;
  let otlp: OtlpReceiver | undefined;
  beforeAll(() => {
    // The batch processor's delay (an OTEL_* variable the SDK reads itself): spans arrive within 50 ms.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
  });
  afterEach(async () => {
    await t?.close();
    await webhook?.close();
    await otlp?.close();
    t = webhook = otlp = undefined;
  });

  it('continues the request traceparent through the launch steps and chain transactions to each delivery and its traceparent header (http/protobuf)', async () => {
    otlp = await startOtlpReceiver();
    webhook = await startReceiver(systemClock);
    const endpointHook = await startReceiver(systemClock, '/endpoint');
    t = await startTestService({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_SERVICE_NAME: 'launch-service-test' } });
    expect(tracingOn()).toBe(true);
    try {
      const key = await t.key('acme', ['launches:write', 'launches:read']);
      // A throttled endpoint: its deliveries are claimed from the table (not handed over at commit), so
      // both ways an attempt finds its event's trace context are exercised.
      const created = await t.request('/api/webhook-endpoints', { method: 'POST', key, json: { url: endpointHook.url, events: ['launch.*'], rateLimitPerSecond: 50 } });
      expect(created.status).toBe(201);
      const endpointSecret = ((await created.json()) as Json).endpoint.secret as string;

      const traceId = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ webhookUrl: webhook.url, webhookSecret: SECRET }), headers: { traceparent: `00-${traceId}-${callerSpan}-01` } });
      expect(res.status).toBe(202);
      const launchId = ((await res.json()) as Json).launch.id as string;
      t.service.start();
      await until(() => webhook!.requests.length >= TOKEN_LAUNCH_EVENTS.length && endpointHook.requests.length >= TOKEN_LAUNCH_EVENTS.length, 'every delivery');

      // Every delivery, to the launch URL and to the endpoint, carries the request's trace id in its
      // traceparent header, each with its own span id (the attempt's).
      const deliveries = [...webhook.requests, ...endpointHook.requests];
      const headerSpans = new Map<string, string>();
      for (const r of deliveries) {
        const header = String(r.headers.traceparent ?? '');
        expect(header, r.body).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
        headerSpans.set(header.split('-')[2]!, (JSON.parse(r.body) as Json).event);
      }
      expect(headerSpans.size).toBe(deliveries.length);
      expect(webhook.requests.map((r) => verifyWebhook(r.body, r.headers, SECRET).payload as Json).every((p) => p.launchId === launchId)).toBe(true);
      expect(endpointHook.requests.every((r) => verifyWebhook(r.body, r.headers, endpointSecret).payload)).toBeTruthy();

      // The exported spans: every attempt span the headers name arrived, in the request's trace.
      await until(() => [...headerSpans.keys()].every((id) => otlp!.spans.some((s) => s.spanId === id)), 'the attempt spans');
      const trace = otlp.spans.filter((s) => s.traceId === traceId);
      const ids = byId(trace);
      expect(otlp.contentTypes.every((c) => c.startsWith('application/x-protobuf'))).toBe(true);
      expect(trace.every((s) => s.serviceName === 'launch-service-test')).toBe(true);

      const request = trace.find((s) => s.name === 'POST /api/launches')!;
      expect(request, JSON.stringify(trace.map((s) => s.name))).toBeDefined();
      expect(request.parentSpanId).toBe(callerSpan); // the caller's span is its parent
      expect(request.kind).toBe(2);
      expect(request.attributes['http.response.status_code']).toBe(202);

      const run = trace.find((s) => s.name === 'launch.run')!;
      expect(run.parentSpanId).toBe(request.spanId); // across the durable hop: launches.trace_parent
      const steps = trace.filter((s) => s.name.startsWith('launch.step '));
      expect(steps.map((s) => s.attributes['launch.step']).sort()).toEqual(['create_metadata', 'create_mint', 'distribute_supply'].sort());
      for (const step of steps) expect(step.parentSpanId).toBe(run.spanId);
      const txs = trace.filter((s) => s.name.startsWith('chain.transaction '));
      expect(txs.length).toBeGreaterThanOrEqual(2); // the mint's and the distribution's (metadata needs no transaction of its own here)
      for (const tx of txs) {
        expect(steps.map((s) => s.spanId)).toContain(tx.parentSpanId);
        expect(String(tx.attributes['chain.tx.signature'])).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
      }
      const stepSignatures = steps.flatMap((s) => s.attributes['launch.step.signatures'] as string[]);
      expect(txs.map((tx) => tx.attributes['chain.tx.signature']).sort()).toEqual([...stepSignatures].sort());

      const attempts = trace.filter((s) => s.name.startsWith('webhook.attempt '));
      expect(attempts.map((s) => s.spanId).sort()).toEqual([...headerSpans.keys()].sort());
      for (const a of attempts) {
        expect(a.kind).toBe(3);
        expect(a.attributes['http.response.status_code']).toBe(200);
        expect(a.attributes['launch.id']).toBe(launchId);
        expect(a.name).toBe(`webhook.attempt ${headerSpans.get(a.spanId)}`);
        // launch.queued was recorded by the request; the others by the run or a step.
        const chain = ancestry(a, ids);
        expect(chain.at(-1), a.name).toBe('POST /api/launches');
        if (a.attributes['webhook.event'] === 'launch.queued') expect(chain).toEqual(['POST /api/launches']);
        else expect(chain).toContain('launch.run');
      }
      // Nothing of the launch went to another trace.
      expect(otlp.spans.filter((s) => s.attributes['launch.id'] === launchId && s.traceId !== traceId)).toEqual([]);
    } finally {
      await endpointHook.close();
    }
  }, 90_000);

  it('exports OTLP/JSON with http/json; a malformed traceparent starts a new trace, delivered with the launch', async () => {
    otlp = await startOtlpReceiver();
    webhook = await startReceiver(systemClock);
    t = await startTestService({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces`, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' } });
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ webhookUrl: webhook.url, webhookSecret: SECRET }), headers: { traceparent: '00-not-a-trace-01' } });
    expect(res.status).toBe(202);
    t.service.start();
    await until(() => webhook!.requests.length >= TOKEN_LAUNCH_EVENTS.length, 'every delivery');
    const traceIds = new Set(webhook.requests.map((r) => String(r.headers.traceparent).split('-')[1]));
    expect(traceIds.size).toBe(1);
    const [traceId] = traceIds;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    await until(() => otlp!.spans.filter((s) => s.traceId === traceId && s.name.startsWith('webhook.attempt ')).length >= TOKEN_LAUNCH_EVENTS.length, 'the attempt spans');
    expect(otlp.contentTypes.every((c) => c.startsWith('application/json'))).toBe(true);
    const request = otlp.spans.find((s) => s.traceId === traceId && s.name === 'POST /api/launches')!;
    expect(request.parentSpanId).toBe(''); // a new trace's root
    expect(request.serviceName).toBe('launch-service');
  }, 90_000);

  it('without an exporter: the SDK is not started, deliveries carry no traceparent, rows record none', async () => {
    webhook = await startReceiver(systemClock);
    t = await startTestService();
    expect(tracingOn()).toBe(false);
    const key = await t.key('acme', ['launches:write', 'launches:read']);
    const res = await t.request('/api/launches', { method: 'POST', key, json: launchBody({ webhookUrl: webhook.url, webhookSecret: SECRET }), headers: { traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` } });
    expect(res.status).toBe(202);
    t.service.start();
    await until(() => webhook!.requests.length >= TOKEN_LAUNCH_EVENTS.length, 'every delivery');
    expect(webhook.requests.filter((r) => r.headers.traceparent !== undefined)).toEqual([]);
    const db = t.service.db;
    expect((await db.selectFrom('launches').select('trace_parent').execute()).map((r) => r.trace_parent)).toEqual([null]);
    expect(new Set((await db.selectFrom('outbox_events').select('trace_parent').execute()).map((r) => r.trace_parent))).toEqual(new Set([null]));
  }, 90_000);

  it('refuses OTEL_EXPORTER_OTLP_PROTOCOL=grpc and a bad endpoint naming the variable; none or OTEL_SDK_DISABLED turn it off', () => {
    const base = { DATA_DIR: '/tmp', SECRET_KEY: randomBytes(32).toString('base64') };
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL.*http\/protobuf or http\/json/);
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_PROTOCOL/);
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: '127.0.0.1:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }).tracing).toEqual({ protocol: 'http/protobuf', url: 'http://127.0.0.1:4318/v1/traces', serviceName: 'launch-service' });
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(loadConfig(base).tracing).toBeUndefined();
  });
});
