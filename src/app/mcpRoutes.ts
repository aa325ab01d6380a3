import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono } from 'hono';
import type { AppEnv } from '../http/env.js';
import { requireAuth } from '../http/middleware/auth.js';
import { readJson } from '../http/middleware/bodyGuards.js';
import { ALREADY_COUNTED } from '../http/middleware/rateLimit.js';
import { createMcpServer } from '../mcp/server.js';

export interface McpRouteDeps {
  version: string;
  /**
   * The service's own app: each tool call is a request to its REST route, made with the caller's
   * key; `env` marks it as already counted against the caller's rate limit.
   */
  fetch(request: Request, env: { [ALREADY_COUNTED]: true }): Response | Promise<Response>;
}

/** The JSON-RPC calls a body carries: each message of a batch, or the one message. */
function callCount(body: unknown): number {
  return Array.isArray(body) ? Math.max(1, body.length) : 1;
}

/**
 * `POST /mcp` (and `GET`): the Model Context Protocol over Streamable HTTP, stateless (docs/mcp.md).
 * The app's `/mcp` guards (src/http/app.ts) have checked the Origin, the key (401 as the REST API
 * answers it), one request against the rate limit, and the body (size, JSON type, depth) by then;
 * here each further call of a batch is counted too. Each tool then calls its REST route in-process
 * with the caller's key, so scopes, owner scoping and the request log apply exactly as for REST.
 */
export function createMcpRoutes(deps: McpRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.all('/', async (c) => {
    requireAuth(c);
    const parsedBody = c.req.method === 'POST' ? await readJson(c) : undefined;
    await c.get('countCalls')(callCount(parsedBody));
    const credentials: Record<string, string> = {};
    for (const name of ['authorization', 'x-api-key']) {
      const value = c.req.header(name);
      if (value !== undefined) credentials[name] = value;
    }
    const base = new URL(c.req.url);
    const server = createMcpServer(deps.version, async (call) => {
      const headers: Record<string, string> = { ...credentials, ...call.headers };
      if (call.body !== undefined) headers['content-type'] = 'application/json';
      const request = new Request(new URL(call.path, base), { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) });
      const res = await deps.fetch(request, { [ALREADY_COUNTED]: true });
      const text = await res.text();
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // Not JSON: passed on as text.
      }
      return { status: res.status, json };
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw, parsedBody === undefined ? undefined : { parsedBody });
    } finally {
      void server.close();
    }
  });
  return app;
}
