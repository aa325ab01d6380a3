import { z } from 'zod';
import { launchRequestSchema } from '../launches/request.js';
import { envelopeSchema, EVENT_DATA_SCHEMAS, EVENT_DESCRIPTIONS, type DocumentedEventKind } from '../webhooks/eventSchemas.js';
import { fundingPaths } from './openapiFunding.js';
import { feePaths } from './openapiFees.js';
import { patchLaunchOperation, webhookEndpointPaths, webhookEventDocs } from './openapiEndpoints.js';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string) => ({ description, content: { 'application/json': { schema } } });
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [String(s), json(ref('Error'), ERROR_TEXT[s] ?? 'Error')]));

const ERROR_TEXT: Record<number, string> = {
  400: 'invalid_request: details.fields names each bad field',
  401: 'unauthorized (WWW-Authenticate: Bearer)',
  403: 'forbidden: details.required_scope / funding_limit_exceeded: details.limit, max, resetsAt',
  404: 'not_found (with docs_url)',
  409: 'conflict / idempotency_in_progress',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'idempotency_key_reused / unprocessable_entity / chain_capability_missing',
  429: 'rate_limited (Retry-After)',
};

const bearer = [{ bearer: [] }];
const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });
const pageParams = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200 } },
  { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0 } },
];

/** The OpenAPI 3.1 description of every route; request bodies come from the route schemas. */
export function buildOpenApi(version: string): Json {
  const launchRequest = z.toJSONSchema(launchRequestSchema, { io: 'input', unrepresentable: 'any' }) as Json;
  delete launchRequest.$schema;
  const eventSchemas = Object.fromEntries(
    (Object.keys(EVENT_DATA_SCHEMAS) as DocumentedEventKind[]).map((kind) => {
      const schema = z.toJSONSchema(envelopeSchema(kind), { io: 'output', unrepresentable: 'any' }) as Json;
      delete schema.$schema;
      return [kind, schema];
    }),
  );
  return {
    openapi: '3.1.0',
    webhooks: webhookEventDocs(eventSchemas, EVENT_DESCRIPTIONS),
    info: { title: 'Token launch service', version, description: 'Launches SPL tokens as durable jobs and reports each step through signed webhooks. API version 2026-10-01 (Service-Api-Version header).' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key sk_...; also accepted as x-api-key' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' }, details: {}, docs_url: { type: 'string' } } } },
        },
        Pagination: {
          type: 'object',
          properties: { limit: { type: ['integer', 'null'] }, offset: { type: 'integer' }, returned: { type: 'integer' }, total: { type: 'integer' }, has_more: { type: 'boolean' }, next_offset: { type: ['integer', 'null'] } },
        },
        LaunchRequest: launchRequest,
        Launch: { type: 'object', description: 'A launch with its steps, results, partialResults and error', properties: { id: { type: 'string' }, status: { enum: ['awaiting_signatures', 'queued', 'processing', 'complete', 'failed'] }, signing: { const: 'creator', description: 'present on a creator-signed launch (docs/signing.md)' }, steps: { type: 'array', description: 'name, status (pending, running, waiting, complete, failed, skipped), attempts, waitingFor, waitingSince, nextAttemptAt (a step waiting on a transient chain fault), timings, transactions, result, error', items: { type: 'object' } }, watches: { type: 'array', description: 'GET /api/launches/{id} only: what the chain watcher follows since the launch completed (kind, address, state, cursor, nextCheckAt, lastCheckedAt, lastActivityAt, cliffAt, endsAt, endedReason)', items: { type: 'object' } }, graduation: { type: ['object', 'null'], description: 'GET /api/launches/{id} only, a bonding curve: its graduation to DAMM v2 (state waiting | due | done, pool, thresholdLamports, dueAt, graduatedAt, ammPool, positions, signature, attempts, lastError); null for other launches' } } },
        SigningRequest: {
          type: 'object',
          properties: {
            status: { enum: ['awaiting_signatures', 'signed', 'expired'] },
            expiresAt: { type: 'string', format: 'date-time', description: "the setup's blockhash expiry while it is offered, then the signing deadline" },
            deadlineAt: { type: 'string', format: 'date-time', description: 'SIGNING_DEADLINE after the create' },
            transactions: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  index: { type: 'integer' },
                  step: { type: 'string', description: 'setup (one or more: the nonce accounts), a launch step (create_mint … create_pool), or close_nonces (the rent return)' },
                  message: { type: 'string', description: 'base64 of the message bytes to sign' },
                  signers: { type: 'array', items: { type: 'string' }, description: 'the keys still to sign (the creator)' },
                  signed: { type: 'boolean' },
                },
              },
            },
          },
        },
        Health: {
          type: 'object',
          required: ['status', 'timestamp', 'version', 'checks', 'uptime', 'circuitBreakers'],
          properties: {
            status: { enum: ['healthy', 'degraded', 'unhealthy'] },
            timestamp: { type: 'string', format: 'date-time' },
            version: { type: 'string' },
            checks: { type: 'object', additionalProperties: { type: 'object', properties: { status: { enum: ['pass', 'fail'] }, latencyMs: { type: 'number' }, message: { type: 'string' } } } },
            uptime: { type: 'number', description: 'seconds' },
            circuitBreakers: { type: 'object', additionalProperties: { type: 'object', properties: { state: { enum: ['closed', 'open', 'half-open'] }, failures: { type: 'number' } } } },
          },
        },
      },
    },
    paths: {
      '/api/health': {
        get: { summary: 'Health of the database, chain and cache, and every circuit breaker', responses: { 200: json(ref('Health'), 'healthy or degraded'), 503: json(ref('Health'), 'unhealthy') } },
        head: { summary: '200 with no body whenever the process is serving; runs no checks', responses: { 200: { description: 'serving' } } },
      },
      '/api/openapi': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1' } } } },
      '/api/launches': {
        post: {
          summary: 'Create a launch',
          security: bearer,
          parameters: [
            { name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 255 } },
            {
              name: 'traceparent',
              in: 'header',
              schema: { type: 'string' },
              description: 'W3C trace context (any request): while the service exports traces (OTEL_EXPORTER_OTLP_ENDPOINT), the request, the launch\'s steps and chain transactions and every delivery\'s attempt join this trace; each delivery carries its own traceparent in it. A malformed one starts a new trace.',
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('LaunchRequest') } } },
          responses: {
            202: json({ type: 'object', properties: { launch: ref('Launch') } }, 'Accepted; Location header; Idempotent-Replayed: true on replay'),
            402: json(ref('Error'), 'insufficient_funds: the owner’s funding wallet cannot cover the quote; nothing queued'),
            ...errors(400, 401, 403, 409, 413, 415, 422, 429),
          },
        },
        get: {
          summary: "List the caller's launches, newest first",
          security: bearer,
          parameters: [...pageParams, { name: 'status', in: 'query', schema: { enum: ['awaiting_signatures', 'queued', 'processing', 'complete', 'failed'] } }],
          responses: { 200: json({ type: 'object', properties: { launches: { type: 'array', items: ref('Launch') }, pagination: ref('Pagination') } }, 'A page of launches'), ...errors(400, 401, 403, 429) },
        },
      },
      '/api/launches/{id}': { get: { summary: 'A launch with its steps', security: bearer, parameters: [idParam('id')], responses: { 200: json({ type: 'object', properties: { launch: ref('Launch') } }, 'The launch'), ...errors(401, 403, 404) }  }, patch: patchLaunchOperation },
      '/api/launches/{id}/signing': {
        get: {
          summary: 'A creator-signed launch: every transaction offered to the creator, with the exact message bytes to sign (docs/signing.md)',
          security: bearer,
          parameters: [idParam('id')],
          responses: {
            200: json({ type: 'object', properties: { signing: ref('SigningRequest') } }, 'The signing request'),
            ...errors(401, 403, 404),
          },
        },
      },
      '/api/launches/{id}/signatures': {
        post: {
          summary: "The creator's signatures: each verified against its message and the creator before any is stored",
          security: bearer,
          parameters: [idParam('id')],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['signatures'],
                  properties: { signatures: { type: 'array', minItems: 1, maxItems: 64, items: { type: 'object', required: ['index', 'signature'], properties: { index: { type: 'integer', minimum: 0 }, signature: { type: 'string', description: 'base58 Ed25519 signature' } } } } },
                },
              },
            },
          },
          responses: {
            200: json({ type: 'object', properties: { signing: ref('SigningRequest') } }, 'Stored; the signing request as it is now (after the setup: the launch’s transactions)'),
            409: json(ref('Error'), 'the launch takes no signatures (not awaiting them, or past its deadline), the setup was re-offered meanwhile, or setup_expired: a setup signed after its blockhash expired (details.index; nothing stored, sign the fresh one)'),
            400: json(ref('Error'), 'invalid_request: a malformed body, an unknown index, or a launch-round request without close_nonces while it is unsigned (the rent return is signed first); nothing was stored'),
            422: json(ref('Error'), 'invalid_signature: details.index names the transaction; nothing was stored'),
            ...errors(401, 403, 404),
          },
        },
      },
      '/api/launches/{id}/deliveries': {
        get: {
          summary: 'Webhook deliveries of a launch with every attempt, oldest first',
          security: bearer,
          parameters: [idParam('id'), ...pageParams],
          responses: {
            200: { description: '{deliveries: [...], pagination}; each attempt has series (1, then one more for each recover of the same delivery) and attempt (its place in that series, from 1: the retry schedule position X-Service-Attempt carried)' },
            ...errors(400, 401, 403, 404),
          },
        },
      },
      '/api/deliveries/{id}/redeliver': {
        post: {
          summary: 'Queue a fresh delivery of that event (409 limit_reached past MAX_REDELIVERIES_PER_DELIVERY)',
          security: bearer,
          parameters: [idParam('id')],
          responses: { 202: { description: '{delivery}' }, ...errors(401, 403, 404, 409) },
        },
      },
      '/api/webhooks/test': {
        post: {
          summary: 'Send one simulated, signed event to a URL (no retry)',
          security: bearer,
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['webhookUrl', 'event'], properties: { webhookUrl: { type: 'string' }, event: { type: 'string' }, webhookSecret: { type: 'string' } } } } } },
          responses: { 200: { description: 'The outcome of the attempt' }, ...errors(400, 401, 415) },
        },
      },
      '/api/dead-letters': { get: { summary: 'Dead letters (launch jobs, deliveries, and transactions a watch could not decode)', security: bearer, parameters: [...pageParams, { name: 'kind', in: 'query', schema: { enum: ['launch', 'delivery', 'watch'] } }, { name: 'status', in: 'query', schema: { enum: ['open', 'retried', 'resolved'] } }], responses: { 200: { description: '{deadLetters, pagination}' }, ...errors(400, 401, 403) } } },
      '/api/dead-letters/{id}/retry': { post: { summary: 'Resume the launch at its failed step, or redeliver the event', security: bearer, parameters: [idParam('id')], responses: { 200: { description: '{deadLetter}' }, ...errors(401, 403, 404, 409) } } },
      '/api/dead-letters/{id}/resolve': { post: { summary: 'Mark reviewed without retrying', security: bearer, parameters: [idParam('id')], responses: { 200: { description: '{deadLetter}' }, ...errors(401, 403, 404, 409) } } },
      '/api/breakers': { get: { summary: 'Every endpoint circuit breaker (admin): id, endpoint, host, state, failures, openedAt, nextTrialAt, pendingDeliveries', security: bearer, responses: { 200: { description: '{breakers}' }, ...errors(401, 403) } } },
      '/api/breakers/{key}/reset': { post: { summary: 'Close a breaker (admin); its paused deliveries go out. key: a breaker id (brk_…), a URL-encoded endpoint, or a host name (all its endpoints)', security: bearer, parameters: [idParam('key')], responses: { 200: { description: '{breakers}: the breakers reset' }, ...errors(401, 403, 404) } } },
      '/dashboard': { get: { summary: 'Operator dashboard (HTML, sign in with an API key; pages below /dashboard, forms with a CSRF token)', responses: { 200: { description: 'text/html' }, 303: { description: 'to /dashboard/sign-in without a session' } } } },
      ...webhookEndpointPaths,
      ...fundingPaths,
      ...feePaths,
      '/mcp': {
        post: {
          summary: 'Model Context Protocol (Streamable HTTP, stateless): a JSON-RPC message such as tools/list or tools/call; each tool is one route of this API called with your key (docs/mcp.md)',
          description: 'Send Accept: application/json, text/event-stream (without it: 406). Tools: quote_launch, create_launch, get_launch, list_launches, list_launch_events, get_signing_request, submit_signatures, get_fees, claim_fees, get_funding, send_test_webhook, list_webhook_endpoints, create_webhook_endpoint; tools/list gives their input schemas.',
          security: bearer,
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 request (or a batch)', properties: { jsonrpc: { const: '2.0' }, id: {}, method: { type: 'string' }, params: { type: 'object' } } } } } },
          responses: { 200: { description: 'The JSON-RPC answer (application/json)' }, 406: { description: 'Accept does not name both application/json and text/event-stream' }, ...errors(401) },
        },
      },
      '/metrics': { get: { summary: 'Prometheus metrics (text format); needs Bearer METRICS_TOKEN when that is set', responses: { 200: { description: 'text/plain; version=0.0.4' }, 401: { description: 'METRICS_TOKEN set and not presented' } } } },
    },
  };
}
