import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { TOOLS, type RestCall, type ToolDefinition } from './tools.js';

/** Runs a REST call as the caller (the composition root passes the app with the caller's key). */
export type RestClient = (call: RestCall) => Promise<{ status: number; json: unknown }>;

/** A tool as tools/list shows it: the JSON Schema of its arguments, generated from its zod schemas once. */
function describeTool(tool: ToolDefinition): Tool {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(z.object(tool.inputSchema), { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return { name: tool.name, description: tool.description, inputSchema: inputSchema as Tool['inputSchema'], annotations: tool.annotations };
}

/** What a call's arguments are checked against here: everything but the REST body, which its route checks. */
function argumentsSchema(tool: ToolDefinition): z.ZodType {
  const body = tool.body === undefined ? {} : { [tool.body]: z.unknown().refine((v) => v !== undefined, { message: 'is required' }) };
  return z.strictObject({ ...tool.inputSchema, ...body });
}

const TOOL_LIST = TOOLS.map(describeTool);
const ARGUMENTS = new Map(TOOLS.map((tool) => [tool.name, argumentsSchema(tool)]));

/** A refusal as a tool error: the envelope's code first, then the envelope itself. */
function refusal(envelope: Record<string, unknown>): CallToolResult {
  const code = (envelope.error as { code?: string } | undefined)?.code ?? 'error';
  return { isError: true, content: [{ type: 'text', text: `${code}: ${JSON.stringify(envelope)}` }], structuredContent: envelope };
}

/**
 * One MCP server for one request (stateless Streamable HTTP): every tool of {@link TOOLS}, each
 * answered with the REST answer as text plus structuredContent, and a refusal (status ≥ 400) as a
 * tool error carrying the envelope. Bad arguments are refused in the envelope's words
 * (`invalid_request`, `details.fields`) before any REST call; the REST body is checked by its route.
 */
export function createMcpServer(version: string, rest: RestClient): Server {
  const server = new Server({ name: 'launch-service', version }, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_LIST }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = TOOLS.find((t) => t.name === request.params.name);
    if (tool === undefined) {
      return refusal({ error: { code: 'not_found', message: `No tool named "${request.params.name}"; tools/list names them` } });
    }
    const parsed = ARGUMENTS.get(tool.name)!.safeParse(request.params.arguments ?? {});
    if (!parsed.success) {
      const fields = parsed.error.issues.map((issue) => ({ field: issue.path.join('.') || '(arguments)', message: issue.message }));
      return refusal({ error: { code: 'invalid_request', message: `The arguments of ${tool.name} are invalid`, details: { fields } } });
    }
    const { status, json } = await rest(tool.rest(parsed.data as Record<string, unknown>));
    const structured = (json !== null && typeof json === 'object' ? json : { value: json }) as Record<string, unknown>;
    if (status >= 400) return refusal(structured);
    return { content: [{ type: 'text', text: JSON.stringify(json) }], structuredContent: structured };
  });
  return server;
}
