import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono } from 'hono';
import { findActiveKey } from '../auth/apiKeys.js';
import type { Db } from '../db/database.js';
import { createMcpServer } from '../mcp/server.js';

export interface McpRouteDeps {
  db: Db;
  version: string;
  /** The service's own app: each tool call is a request to its REST route, made with the caller's key. */
  fetch(request: Request): Response | Promise<Response>;
}

const BEARER = /^Bearer\s+(sk_\S{1,200})\s*$/i;

/**
 * `POST /mcp` (and `GET`): the Model Context Protocol over Streamable HTTP, stateless (docs/mcp.md).
 * The caller's API key is checked here (401 as the REST API answers it); each tool then calls its
 * REST route in-process with that key, so scopes, owner scoping, rate limits and the request log
 * apply exactly as for REST.
 */
export function createMcpRoutes(deps: McpRouteDeps): Hono {
  const app = new Hono();
  app.all('/', async (c) => {
    const authorization = c.req.header('authorization') ?? '';
    const key = BEARER.exec(authorization)?.[1];
    if (key === undefined || !(await findActiveKey(deps.db, key))) {
      c.header('WWW-Authenticate', 'Bearer realm="launch-service"');
      return c.json({ error: { code: 'unauthorized', message: key === undefined ? 'An API key is required: Authorization: Bearer sk_...' : 'API key is invalid or revoked' } }, 401);
    }
    const base = new URL(c.req.url);
    const server = createMcpServer(deps.version, async (call) => {
      const headers: Record<string, string> = { authorization, ...call.headers };
      if (call.body !== undefined) headers['content-type'] = 'application/json';
      const res = await deps.fetch(new Request(new URL(call.path, base), { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) }));
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
      return await transport.handleRequest(c.req.raw);
    } finally {
      void server.close();
    }
  });
  return app;
}
