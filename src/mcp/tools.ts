import { z } from 'zod';
import { launchRequestSchema } from '../launches/request.js';
import { WEBHOOK_EVENT_KINDS } from '../webhooks/sampleEvents.js';

/**
 * The MCP tools (docs/mcp.md): each one is a call of a REST route, so a tool runs the very use case,
 * validation, scope check, owner scoping, rate limit and error envelope the REST API runs.
 */
export interface RestCall {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /**
   * The arguments, from the same zod schemas the REST routes validate with (the launch request is
   * `launchRequestSchema` itself): published as the tool's JSON Schema. A call is checked against
   * `inputSchema` with the REST body (`body`) left to the route, so its refusals come in the
   * envelope's own words and fields.
   */
  inputSchema: z.ZodRawShape;
  /** The argument that is the REST request body, checked by the route rather than here. */
  body?: string;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  rest(args: Record<string, unknown>): RestCall;
}

const page = {
  limit: z.number().int().min(1).max(200).optional().describe('Page size (default 50)'),
  offset: z.number().int().min(0).optional().describe('Items to skip'),
};
const id = (what: string) => z.string().min(1).max(200).describe(`The ${what} id`);
const read = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

function query(args: Record<string, unknown>, names: string[]): string {
  const params = new URLSearchParams();
  for (const name of names) if (args[name] !== undefined) params.set(name, String(args[name]));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

const seg = (value: unknown) => encodeURIComponent(String(value));

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'quote_launch',
    description: 'What a launch would cost (rent, fees, the pool\'s SOL) and whether your funding wallet covers it, without launching (POST /api/launches/quote).',
    inputSchema: { launch: launchRequestSchema.describe('The launch request body (docs/api.md, "The launch request")') },
    body: 'launch',
    annotations: read,
    rest: (args) => ({ method: 'POST', path: '/api/launches/quote', body: args.launch }),
  },
  {
    name: 'create_launch',
    description:
      'Launch a token (POST /api/launches). `launch` is the launch request of docs/api.md (name, ticker, totalSupply, creator, webhookUrl, webhookSecret, …). `idempotencyKey` is required: a retry with the same key and launch returns the first launch instead of launching twice.',
    inputSchema: {
      idempotencyKey: z.string().min(1).max(255).describe('Idempotency-Key: the same key and launch return the first launch'),
      launch: launchRequestSchema.describe('The launch request body (docs/api.md, "The launch request")'),
    },
    body: 'launch',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    rest: (args) => ({ method: 'POST', path: '/api/launches', body: args.launch, headers: { 'idempotency-key': String(args.idempotencyKey) } }),
  },
  {
    name: 'get_launch',
    description: 'One launch with its steps, results and error (GET /api/launches/{id}).',
    inputSchema: { launchId: id('launch') },
    annotations: read,
    rest: (args) => ({ method: 'GET', path: `/api/launches/${seg(args.launchId)}` }),
  },
  {
    name: 'list_launches',
    description: 'Your launches, newest first (GET /api/launches).',
    inputSchema: { status: z.enum(['awaiting_signatures', 'queued', 'processing', 'complete', 'failed']).optional(), ...page },
    annotations: read,
    rest: (args) => ({ method: 'GET', path: `/api/launches${query(args, ['status', 'limit', 'offset'])}` }),
  },
  {
    name: 'list_launch_events',
    description: "A launch's events in order, each with the exact envelope its webhooks carry (GET /api/launches/{id}/events).",
    inputSchema: { launchId: id('launch'), ...page },
    annotations: read,
    rest: (args) => ({ method: 'GET', path: `/api/launches/${seg(args.launchId)}/events${query(args, ['limit', 'offset'])}` }),
  },
  {
    name: 'get_fees',
    description: "A launch's creator fees, read from the chain: who a claim pays and what each source holds (a bonding curve's creator trading fee; after graduation also its DAMM v2 position's fees, SOL and token) (GET /api/launches/{id}/fees).",
    inputSchema: { launchId: id('launch') },
    annotations: read,
    rest: (args) => ({ method: 'GET', path: `/api/launches/${seg(args.launchId)}/fees` }),
  },
  {
    name: 'claim_fees',
    description:
      "Claim a launch's creator fees (the curve's and, after graduation, the DAMM v2 position's) and pay them to its fee recipient (POST /api/launches/{id}/fees/claim). `idempotencyKey` is required: a retry with the same key answers the first claim instead of claiming again; nothing claimable answers empty lists.",
    inputSchema: {
      launchId: id('launch'),
      idempotencyKey: z.string().min(1).max(255).describe('Idempotency-Key: the same key answers the first claim'),
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    rest: (args) => ({ method: 'POST', path: `/api/launches/${seg(args.launchId)}/fees/claim`, headers: { 'idempotency-key': String(args.idempotencyKey) } }),
  },
  {
    name: 'get_signing_request',
    description:
      "A creator-signed launch's transactions for the creator to sign: each message's bytes (base64) and signers (GET /api/launches/{id}/signing, docs/signing.md). The creator's wallet signs; this service never holds that key.",
    inputSchema: { launchId: id('launch') },
    annotations: read,
    rest: (args) => ({ method: 'GET', path: `/api/launches/${seg(args.launchId)}/signing` }),
  },
  {
    name: 'submit_signatures',
    description:
      "The creator's signatures of a creator-signed launch's transactions (POST /api/launches/{id}/signatures): each verified before any is stored; a wrong one is invalid_signature naming its index. In the launch round, include close_nonces (the rent return) in the first call. Once all are signed the launch is queued.",
    inputSchema: {
      launchId: id('launch'),
      signatures: z
        .array(z.strictObject({ index: z.number().int().min(0).describe('The transaction index of the signing request'), signature: z.string().max(100).describe('base58 Ed25519 signature of its message') }))
        .min(1)
        .max(64),
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    rest: (args) => ({ method: 'POST', path: `/api/launches/${seg(args.launchId)}/signatures`, body: { signatures: args.signatures } }),
  },
  {
    name: 'get_funding',
    description: 'Your funding wallet: its address, balance, what is reserved for launches in flight, and the latest ledger entries (GET /api/funding).',
    inputSchema: {},
    annotations: read,
    rest: () => ({ method: 'GET', path: '/api/funding' }),
  },
  {
    name: 'send_test_webhook',
    description: 'Send one signed sample event to a URL and report the answer (POST /api/webhooks/test, docs/delivery.md).',
    inputSchema: {
      body: z
        .strictObject({
          webhookUrl: z.string().max(2048).describe('The http(s) URL to send to'),
          event: z.enum(WEBHOOK_EVENT_KINDS).describe('The sample event kind'),
          webhookSecret: z.string().min(1).max(1024).optional().describe("The secret to sign with (default: the server's test secret)"),
        })
        .describe('The test request body (docs/api.md)'),
    },
    body: 'body',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    rest: (args) => ({ method: 'POST', path: '/api/webhooks/test', body: args.body }),
  },
  {
    name: 'list_webhook_endpoints',
    description: 'Your webhook endpoints (GET /api/webhook-endpoints).',
    inputSchema: { ...page },
    annotations: read,
    rest: (args) => ({ method: 'GET', path: `/api/webhook-endpoints${query(args, ['limit', 'offset'])}` }),
  },
  {
    name: 'create_webhook_endpoint',
    description: "Create an endpoint that receives your events of every launch; its secret is returned only here (POST /api/webhook-endpoints).",
    inputSchema: {
      url: z.string().min(1).max(2048),
      events: z.array(z.string()).optional().describe('Filters: "*", an event kind, or a prefix such as "launch.*"'),
      description: z.string().optional(),
      signatureScheme: z.enum(['service', 'standard']).optional(),
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    rest: (args) => ({ method: 'POST', path: '/api/webhook-endpoints', body: args }),
  },
];
