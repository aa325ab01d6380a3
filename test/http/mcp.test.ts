import type { ServerType } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/http/server.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';

/** The MCP server at /mcp with the SDK's own client over real HTTP (docs/mcp.md). */
let t: TestService;
let server: ServerType;
let base: string;
const clients: Client[] = [];

beforeEach(async () => {
  t = await startTestService();
  t.service.start();
  const listening = await startHttpServer({ fetch: t.service.app.fetch, port: 0, hostname: '127.0.0.1', limits: { requestTimeoutMs: 5000, maxConnectionsPerClient: 64 } });
  server = listening.server;
  base = `http://127.0.0.1:${listening.port}`;
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

async function connectAs(key: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  clients.push(client);
  return client;
}

type ToolAnswer = { isError?: boolean; structuredContent?: any; content: Array<{ type: string; text?: string }> };

describe('the MCP server', () => {
  it('lists its tools with annotations, creates a launch, follows it to complete and reads its events', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const client = await connectAs(key);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['create_launch', 'create_webhook_endpoint', 'get_funding', 'get_launch', 'list_launch_events', 'list_launches', 'list_webhook_endpoints', 'quote_launch', 'send_test_webhook']);
    const create = tools.find((tool) => tool.name === 'create_launch')!;
    expect(create.inputSchema.required).toContain('idempotencyKey');
    expect(create.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true });
    expect(tools.find((tool) => tool.name === 'get_launch')!.annotations?.readOnlyHint).toBe(true);

    const body = launchBody();
    const created = (await client.callTool({ name: 'create_launch', arguments: { idempotencyKey: 'agent-1', launch: body } })) as ToolAnswer;
    expect(created.isError).toBeFalsy();
    const launchId = created.structuredContent.launch.id as string;
    expect(JSON.parse(created.content[0]!.text!)).toEqual(created.structuredContent);
    // The agent's retry returns the same launch.
    const again = (await client.callTool({ name: 'create_launch', arguments: { idempotencyKey: 'agent-1', launch: body } })) as ToolAnswer;
    expect(again.structuredContent.launch.id).toBe(launchId);

    let status = '';
    for (const deadline = Date.now() + 30_000; status !== 'complete' && Date.now() < deadline; ) {
      const got = (await client.callTool({ name: 'get_launch', arguments: { launchId } })) as ToolAnswer;
      status = got.structuredContent.launch.status as string;
      if (status !== 'complete') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe('complete');
    const events = (await client.callTool({ name: 'list_launch_events', arguments: { launchId } })) as ToolAnswer;
    const rest = await (await t.request(`/api/launches/${launchId}/events`, { key })).json();
    expect(events.structuredContent).toEqual(rest);
    const listed = (await client.callTool({ name: 'list_launches', arguments: {} })) as ToolAnswer;
    expect(listed.structuredContent.launches.map((l: { id: string }) => l.id)).toEqual([launchId]);
    // The quote and the funding wallet answer as their REST routes do.
    const quote = (await client.callTool({ name: 'quote_launch', arguments: { launch: launchBody() } })) as ToolAnswer;
    const restQuote = await t.request('/api/launches/quote', { method: 'POST', key, json: launchBody() });
    expect(quote.isError ?? false).toBe(restQuote.status >= 400);
    expect(Object.keys(quote.structuredContent)).toEqual(Object.keys((await restQuote.json()) as object));
    const funding = (await client.callTool({ name: 'get_funding', arguments: {} })) as ToolAnswer;
    expect(funding.structuredContent).toEqual(await (await t.request('/api/funding', { key })).json());
  });

  it("refuses an unknown key, and answers refusals as tool errors with the envelope's code", async () => {
    await expect(connectAs('sk_not_a_key')).rejects.toThrow(/unauthorized/);
    const readOnly = await connectAs(await t.key('acme', ['launches:read']));
    const refused = (await readOnly.callTool({ name: 'create_launch', arguments: { idempotencyKey: 'k', launch: launchBody() } })) as ToolAnswer;
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent.error.code).toBe('forbidden');
    const writer = await connectAs(await t.key('acme', ['launches:read', 'launches:write']));
    const invalid = (await writer.callTool({ name: 'create_launch', arguments: { idempotencyKey: 'k2', launch: { name: '' } } })) as ToolAnswer;
    expect(invalid.isError).toBe(true);
    expect(invalid.structuredContent.error.code).toBe('invalid_request');
    const missing = (await writer.callTool({ name: 'get_launch', arguments: { launchId: 'lch_nope' } })) as ToolAnswer;
    expect(missing.structuredContent.error.code).toBe('not_found');
    const noKey = (await writer.callTool({ name: 'create_launch', arguments: { launch: launchBody() } })) as ToolAnswer;
    expect(noKey.isError).toBe(true);
  });

  it("never shows another owner's launch", async () => {
    const theirs = await t.createLaunch(await t.key('globex', ['launches:read', 'launches:write']));
    const client = await connectAs(await t.key('acme', ['launches:read', 'launches:write']));
    const got = (await client.callTool({ name: 'get_launch', arguments: { launchId: theirs } })) as ToolAnswer;
    expect(got.isError).toBe(true);
    expect(got.structuredContent.error.code).toBe('not_found');
    const events = (await client.callTool({ name: 'list_launch_events', arguments: { launchId: theirs } })) as ToolAnswer;
    expect(events.structuredContent.error.code).toBe('not_found');
    const listed = (await client.callTool({ name: 'list_launches', arguments: {} })) as ToolAnswer;
    expect(listed.structuredContent.launches).toEqual([]);
  });
});
