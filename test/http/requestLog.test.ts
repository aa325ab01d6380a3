import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';
import { captureLogger } from '../support/webhooks.js';

type Line = Record<string, unknown>;

let t: TestService;
let lines: string[];
let key: string;

beforeAll(async () => {
  const captured = captureLogger();
  lines = captured.lines;
  t = await startTestService({ logger: captured.logger, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  key = await t.key('acme', ['launches:write', 'launches:read']);
});
afterAll(async () => {
  await t?.close();
});

const logged = (requestId: string): Line[] => lines.map((l) => JSON.parse(l) as Line).filter((l) => l.requestId === requestId);

describe('the request log', () => {
  it('writes one line per request, the request id first as a child logger binds it', async () => {
    const res = await t.request('/api/launches?limit=1', { key, headers: { 'x-request-id': 'listed' } });
    expect(res.status).toBe(200);
    const [line, ...more] = logged('listed');
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: 30, msg: 'request', requestId: 'listed', method: 'GET', path: '/api/launches', status: 200 });
    expect(typeof line!.durationMs).toBe('number');
    expect(Object.keys(line!)).toEqual(['level', 'time', 'pid', 'hostname', 'requestId', 'method', 'path', 'status', 'durationMs', 'msg']);
  });

  it('binds the request id and the caller to what a route logs itself', async () => {
    const res = await t.request('/api/webhook-endpoints', { method: 'POST', key, json: { url: 'http://127.0.0.1:9/hook' }, headers: { 'x-request-id': 'created' } });
    expect(res.status).toBe(201);
    const created = logged('created').find((l) => l.msg === 'webhook endpoint created');
    expect(created).toMatchObject({ level: 30, requestId: 'created', owner: 'acme', component: 'webhook-endpoints' });
    expect(typeof created!.keyId).toBe('string');
  });

  it('logs an anonymous request without a caller, and an answered health probe at debug', async () => {
    await t.request('/api/openapi', { headers: { 'x-request-id': 'anonymous' } });
    expect(logged('anonymous')).toEqual([expect.objectContaining({ level: 30, path: '/api/openapi', status: 200 })]);
    expect(logged('anonymous')[0]).not.toHaveProperty('keyId');
    await t.request('/api/health', { headers: { 'x-request-id': 'probe' } });
    expect(logged('probe')).toEqual([expect.objectContaining({ level: 20, path: '/api/health', status: 200 })]);
  });
});
