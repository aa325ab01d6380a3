import type { ServerType } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { launchRequestSchema } from '../../src/launches/request.js';
import { startHttpServer } from '../../src/http/server.js';
import { launchBody } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { PublicKey } from '@solana/web3.js';
import { creatorWallet } from '../signing/support/creator.js';

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
    expect(tools.map((tool) => tool.name).sort()).toEqual(['claim_fees', 'create_launch', 'create_webhook_endpoint', 'get_fees', 'get_funding', 'get_launch', 'get_signing_request', 'list_launch_events', 'list_launches', 'list_webhook_endpoints', 'quote_launch', 'send_test_webhook', 'submit_signatures']);
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

  it('publishes input schemas generated from the REST routes\' zod schemas', async () => {
    const client = await connectAs(await t.key('acme', ['launches:read']));
    const { tools } = await client.listTools();
    const launchArg = (name: string) => (tools.find((tool) => tool.name === name)!.inputSchema.properties as Record<string, any>).launch;
    // The launch request as POST /api/launches validates it: the same fields, limits and enums.
    const { $schema: _dialect, ...rest } = z.toJSONSchema(launchRequestSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    for (const name of ['create_launch', 'quote_launch']) {
      expect(launchArg(name)).toEqual({ ...rest, description: 'The launch request body (docs/api.md, "The launch request")' });
      expect(launchArg(name).required).toEqual(expect.arrayContaining(['name', 'ticker', 'totalSupply', 'creator', 'webhookUrl', 'webhookSecret']));
      expect(launchArg(name).properties.tokenStandard.enum).toEqual(['spl-token', 'token-2022']);
      expect(launchArg(name).additionalProperties).toBe(false);
      // Both pool kinds: the Raydium CPMM pool and the bonding curve.
      expect(JSON.stringify(launchArg(name).properties.pool)).toContain('"bonding-curve"');
    }
    const test = tools.find((tool) => tool.name === 'send_test_webhook')!.inputSchema.properties as Record<string, any>;
    expect(test.body.required).toEqual(['webhookUrl', 'event']);
    expect(test.body.properties.event.enum).toContain('launch.complete');
  });

  it('hands a creator the signing request and takes its signatures, refusing a wrong one as invalid_signature', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const client = await connectAs(key);
    const creator = creatorWallet();
    await t.service.chain.requestAirdrop!(new PublicKey(creator.address), 1_000_000_000n);
    const id = await t.createLaunch(key, launchBody({ creator: creator.address, signing: 'creator' }));
    const request = (await client.callTool({ name: 'get_signing_request', arguments: { launchId: id } })) as ToolAnswer;
    expect(request.isError).toBeFalsy();
    const setup = request.structuredContent.signing.transactions[0] as { index: number; message: string };
    const message = Buffer.from(setup.message, 'base64');
    const wrong = (await client.callTool({ name: 'submit_signatures', arguments: { launchId: id, signatures: [{ index: 0, signature: creatorWallet().sign(message) }] } })) as ToolAnswer;
    expect(wrong.isError).toBe(true);
    expect(wrong.structuredContent.error).toMatchObject({ code: 'invalid_signature', details: { index: 0 } });
    const signed = (await client.callTool({ name: 'submit_signatures', arguments: { launchId: id, signatures: [{ index: 0, signature: creator.sign(message) }] } })) as ToolAnswer;
    expect(signed.isError).toBeFalsy();
    expect(signed.structuredContent.signing.transactions.map((tx: { step: string }) => tx.step)).toEqual(['setup', 'create_mint', 'distribute_supply', 'close_nonces']);
  });

  it('refuses bad arguments of every tool in the envelope\'s words, launching and sending nothing', async () => {
    const key = await t.key('acme', ['launches:read', 'launches:write']);
    const client = await connectAs(key);
    const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolAnswer;
    const refusals: Array<[string, Record<string, unknown>, string, string | undefined]> = [
      ['create_launch', { launch: launchBody() }, 'invalid_request', 'idempotencyKey'],
      ['create_launch', { idempotencyKey: 'k', launch: { ...launchBody(), ticker: 'no spaces!' } }, 'invalid_request', 'ticker'],
      ['create_launch', { idempotencyKey: 'k', launch: launchBody(), extra: 1 }, 'invalid_request', undefined],
      ['quote_launch', {}, 'invalid_request', 'launch'],
      ['quote_launch', { launch: { ...launchBody(), decimals: 12 } }, 'invalid_request', 'decimals'],
      ['get_launch', {}, 'invalid_request', 'launchId'],
      ['get_launch', { launchId: 'lch_nope' }, 'not_found', undefined],
      ['list_launches', { status: 'lost' }, 'invalid_request', 'status'],
      ['list_launches', { limit: 0 }, 'invalid_request', 'limit'],
      ['list_launch_events', { launchId: 'lch_nope' }, 'not_found', undefined],
      ['list_launch_events', { launchId: 'lch_nope', offset: -1 }, 'invalid_request', 'offset'],
      ['get_funding', { owner: 'globex' }, 'invalid_request', undefined],
      ['get_fees', {}, 'invalid_request', 'launchId'],
      ['get_fees', { launchId: 'lch_nope' }, 'not_found', undefined],
      ['claim_fees', { launchId: 'lch_nope' }, 'invalid_request', 'idempotencyKey'],
      ['claim_fees', { launchId: 'lch_nope', idempotencyKey: 'k' }, 'not_found', undefined],
      ['send_test_webhook', { body: { webhookUrl: 'ftp://x', event: 'launch.complete' } }, 'invalid_request', 'webhookUrl'],
      ['send_test_webhook', {}, 'invalid_request', 'body'],
      ['list_webhook_endpoints', { limit: 1000 }, 'invalid_request', 'limit'],
      ['create_webhook_endpoint', { url: 'not a url' }, 'invalid_request', 'url'],
      ['get_signing_request', { launchId: 'lch_nope' }, 'not_found', undefined],
      ['submit_signatures', { launchId: 'lch_nope', signatures: [] }, 'invalid_request', 'signatures'],
      ['submit_signatures', { launchId: 'lch_nope', signatures: [{ index: 0, signature: 'x' }] }, 'invalid_request', 'signature'],
      ['submit_signatures', { launchId: 'lch_nope', signatures: [{ index: 0, signature: '1'.repeat(64) }] }, 'not_found', undefined],
      ['no_such_tool', {}, 'not_found', undefined],
    ];
    for (const [name, args, code, field] of refusals) {
      const answer = await call(name, args);
      expect(answer.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(answer.structuredContent.error.code, `${name} ${JSON.stringify(args)}`).toBe(code);
      expect(answer.content[0]!.text!.startsWith(`${code}: `)).toBe(true);
      if (field !== undefined) {
        const fields = (answer.structuredContent.error.details?.fields ?? []) as Array<{ field: string }>;
        expect(fields.some((f) => f.field.split('.').includes(field)), `${name}: ${JSON.stringify(answer.structuredContent)}`).toBe(true);
      }
    }
    expect(((await (await t.request('/api/launches', { key })).json()) as { launches: unknown[] }).launches).toEqual([]);
    expect(((await (await t.request('/api/webhook-endpoints', { key })).json()) as { endpoints: unknown[] }).endpoints).toEqual([]);
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
