import type { ServerType } from '@hono/node-server';
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { startTestService, type TestService } from '../support/service.js';

/** `/mcp` held to the REST API's bounds: rate limit, body size, nesting depth, and Origin (docs/mcp.md). */
let t: TestService;
let server: ServerType;
let port: number;

async function start(env: Record<string, string> = {}): Promise<void> {
  t = await startTestService({ env });
  t.service.start();
  const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
  server = listening.server;
  port = listening.port;
}

afterEach(async () => {
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** A POST to /mcp over a raw socket request, so Host and Origin are exactly what the test sends. */
function post(body: string | Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const call = (id: number, method = 'tools/list', params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });
const batch = (n: number, make = (id: number) => call(id)) => JSON.stringify(Array.from({ length: n }, (_, i) => make(i + 1)));

describe('/mcp bounds', () => {
  it('counts each call of a batch against the key\'s rate limit and answers 429 in the envelope with Retry-After', async () => {
    await start({ RATE_LIMIT_PER_MINUTE: '20' });
    const key = await t.key('acme', ['launches:read']);
    const auth = { authorization: `Bearer ${key}` };
    // Five tool calls, each a REST request inside: counted once each, here, not again at the route.
    const tools = await post(batch(5, (id) => call(id, 'tools/call', { name: 'get_funding', arguments: {} })), auth);
    expect(tools.status).toBe(200);
    expect((tools.json as Array<{ result: { isError?: boolean } }>).map((r) => r.result.isError ?? false)).toEqual([false, false, false, false, false]);
    expect(tools.headers['x-ratelimit-limit']).toBe('20');
    expect(tools.headers['x-ratelimit-remaining']).toBe('15');
    const ten = await post(batch(10), auth);
    expect(ten.status).toBe(200);
    expect(ten.headers['x-ratelimit-remaining']).toBe('5');
    // A batch of ten no longer fits in the five left: refused whole, nothing in it answered.
    const refused = await post(batch(10), auth);
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('rate_limited');
    expect(refused.json.error.message).toContain('10 calls');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['x-ratelimit-remaining']).toBeDefined();
    // Another key has its own budget.
    const other = await post(batch(10), { authorization: `Bearer ${await t.key('globex', ['launches:read'])}` });
    expect(other.status).toBe(200);
  });

  it('refuses a body over BODY_LIMIT_BYTES with 413, declared or streamed', async () => {
    await start();
    const key = await t.key('acme', ['launches:read']);
    const big = JSON.stringify(call(1, 'tools/call', { name: 'get_launch', arguments: { launchId: 'x'.repeat(70_000) } }));
    const declared = await post(big, { authorization: `Bearer ${key}` });
    expect(declared.status).toBe(413);
    expect(declared.json.error.code).toBe('payload_too_large');
    const streamed = await post(Buffer.from(big), { authorization: `Bearer ${key}`, 'transfer-encoding': 'chunked' });
    expect(streamed.status).toBe(413);
  });

  it('refuses arguments nested past 32 levels with 400 invalid_request, never a stack overflow', async () => {
    await start();
    const key = await t.key('acme', ['launches:read']);
    const nested = (depth: number) => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_launch","arguments":{"launchId":${'['.repeat(depth)}${']'.repeat(depth)}}}}`;
    const deep = await post(nested(30_000), { authorization: `Bearer ${key}` });
    expect(deep.status).toBe(400);
    expect(deep.json.error.code).toBe('invalid_request');
    expect(deep.json.error.details).toEqual({ maxDepth: 32 });
    expect(deep.text).not.toMatch(/call stack/i);
    // Just past the bound (3 levels of envelope + 30 of argument = 33) is refused; at it, the tool answers.
    expect((await post(nested(30), { authorization: `Bearer ${key}` })).status).toBe(400);
    const atBound = await post(nested(29), { authorization: `Bearer ${key}` });
    expect(atBound.status).toBe(200);
    expect(atBound.json.result.structuredContent.error.code).toBe('invalid_request');
  });

  it('refuses a foreign Origin with 403 and lets no Origin, its own loopback origin and MCP_ALLOWED_ORIGINS through', async () => {
    await start({ MCP_ALLOWED_ORIGINS: 'https://agents.example.com, http://localhost:6274' });
    const key = await t.key('acme', ['launches:read']);
    const list = JSON.stringify(call(1));
    const as = (headers: Record<string, string>) => post(list, { authorization: `Bearer ${key}`, ...headers });
    const foreign = await as({ origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.json.error.code).toBe('forbidden');
    expect(foreign.json.error.message).toContain('MCP_ALLOWED_ORIGINS');
    // Refused before the key is looked at: no key, still 403.
    expect((await post(list, { origin: 'https://evil.example' })).status).toBe(403);
    // DNS rebinding: the attacker's name is both the Origin and the Host; still foreign.
    expect((await as({ origin: `http://evil.example:${port}`, host: `evil.example:${port}` })).status).toBe(403);
    expect((await as({ origin: 'null' })).status).toBe(403);
    // Its own origin on another port is another origin.
    expect((await as({ origin: `http://127.0.0.1:${port + 1}` })).status).toBe(403);
    const allowedHeaders: Array<Record<string, string>> = [{}, { origin: `http://127.0.0.1:${port}` }, { origin: `http://localhost:${port}`, host: `localhost:${port}` }, { origin: 'https://agents.example.com' }, { origin: 'http://localhost:6274' }];
    for (const allowed of allowedHeaders) {
      const answer = await as(allowed);
      expect(answer.status, JSON.stringify(allowed)).toBe(200);
      expect(answer.json.result.tools.length).toBeGreaterThan(0);
    }
  });
});
