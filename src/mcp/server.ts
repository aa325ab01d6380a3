import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOLS, type RestCall } from './tools.js';

/** Runs a REST call as the caller (the composition root passes the app with the caller's key). */
export type RestClient = (call: RestCall) => Promise<{ status: number; json: unknown }>;

/**
 * One MCP server for one request (stateless Streamable HTTP): every tool of {@link TOOLS}, each
 * answered with the REST answer as text plus structuredContent, and a refusal (status ≥ 400) as a
 * tool error carrying the envelope's code.
 */
export function createMcpServer(version: string, rest: RestClient): McpServer {
  const server = new McpServer({ name: 'launch-service', version });
  for (const tool of TOOLS) {
    server.registerTool(tool.name, { description: tool.description, inputSchema: tool.inputSchema, annotations: tool.annotations }, async (args: Record<string, unknown>): Promise<CallToolResult> => {
      const { status, json } = await rest(tool.rest(args));
      const structured = (json !== null && typeof json === 'object' ? json : { value: json }) as Record<string, unknown>;
      if (status >= 400) {
        const code = (structured.error as { code?: string } | undefined)?.code ?? 'error';
        return { isError: true, content: [{ type: 'text', text: `${code}: ${JSON.stringify(json)}` }], structuredContent: structured };
      }
      return { content: [{ type: 'text', text: JSON.stringify(json) }], structuredContent: structured };
    });
  }
  return server;
}
