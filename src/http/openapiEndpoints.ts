/** OpenAPI paths of the webhook endpoint routes, `PATCH /launches/{id}` and the launch event log (docs/webhooks.md). */

type Json = Record<string, unknown>;

const bearer = [{ bearer: [] }];
const err = { $ref: '#/components/schemas/Error' };
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), { description: 'Error envelope', content: { 'application/json': { schema: err } } }]));
const json = (schema: Json, description: string) => ({ description, content: { 'application/json': { schema } } });
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const pageParams = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1 } },
  { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0 } },
];

const filterDoc = 'Event kinds (launch.complete), group prefixes (launch.*) or "*" for every event; default ["*"]';

export const webhookEndpointSchema: Json = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    url: { type: 'string' },
    description: { type: ['string', 'null'] },
    events: { type: 'array', items: { type: 'string' }, description: filterDoc },
    signatureScheme: { enum: ['service', 'standard'] },
    disabled: { type: 'boolean' },
    disabledAt: { type: ['string', 'null'], format: 'date-time' },
    disabledReason: { type: ['string', 'null'], description: 'disabled_by_owner | endpoint_answered_410 | failing_continuously' },
    failingSince: { type: ['string', 'null'], format: 'date-time', description: 'Start of the current run of failed attempts' },
    rateLimitPerSecond: { type: ['integer', 'null'], description: 'Throttle: at most this many deliveries a second, one send slot every 1.2 s / rate; null: none' },
    ordering: { enum: ['launch', null], description: "launch: each launch's events one at a time in sequence order (the next after the previous was delivered or given up); null: none" },
    previousSecretExpiresAt: { type: ['string', 'null'], format: 'date-time', description: 'While set, attempts carry the signatures of the new and the previous secret' },
    secret: { type: 'string', description: 'whsec_ + base64 of 32 random bytes; only in the create and rotate-secret answers' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
};

const endpointBody = (required: string[]) => ({
  required: true,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        additionalProperties: false,
        required,
        properties: {
          url: { type: 'string', maxLength: 2048, description: 'http(s); https in production' },
          events: { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string' }, description: filterDoc },
          description: { type: ['string', 'null'], maxLength: 500 },
          rateLimitPerSecond: { type: ['integer', 'null'], minimum: 1, maximum: 1000, description: 'Throttle (docs/webhooks.md): at most this many deliveries a second; waiting spends no attempt and never opens the breaker; null: none (the default)' },
          ordering: { enum: ['launch', null], description: "Ordered delivery (docs/webhooks.md): each launch's events one at a time, in sequence order; other launches are not held; null: none (the default)" },
          ...(required.includes('url') ? { signatureScheme: { enum: ['service', 'standard'], default: 'service' } } : { disabled: { type: 'boolean' } }),
        },
      },
    },
  },
});

const endpoint = json({ type: 'object', properties: { endpoint: webhookEndpointSchema } }, '{endpoint}');

/** `PATCH /api/launches/{id}`, merged into that path's item by buildOpenApi. */
export const patchLaunchOperation: Json = {
  summary: "Fix the launch's own webhook destination; pending deliveries go to it at once, later ones too",
  security: bearer,
  parameters: [idParam],
  requestBody: {
    required: true,
    content: {
      'application/json': {
        schema: { type: 'object', additionalProperties: false, minProperties: 1, properties: { webhookUrl: { type: 'string', maxLength: 2048 }, webhookSecret: { type: 'string', minLength: 16, maxLength: 256 } } },
      },
    },
  },
  responses: { 200: { description: '{launch}' }, ...errors(400, 401, 403, 404, 415) },
};

export const webhookEndpointPaths: Json = {
  '/api/event-types': {
    get: {
      summary: 'Every webhook event kind with its description and the JSON Schema of its data (no key needed); the same schemas as this document\'s webhooks section',
      responses: { 200: json({ type: 'object', properties: { eventTypes: { type: 'array', items: { type: 'object', required: ['name', 'description', 'schema'], properties: { name: { type: 'string' }, description: { type: 'string' }, schema: { type: 'object', description: "JSON Schema (2020-12) of the event's data" } } } } } }, '{eventTypes}') },
    },
  },
  '/api/events/stream': {
    get: {
      summary: "The caller's events as Server-Sent Events, in outbox order; resumable with Last-Event-ID",
      security: bearer,
      parameters: [
        { name: 'events', in: 'query', required: false, schema: { type: 'string' }, description: 'Comma-separated filters: "*", an event kind, or a prefix such as "launch.*"' },
        { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'Resume after this event id (one of your events); without it the stream starts at the current end' },
      ],
      responses: { 200: { description: 'text/event-stream: per event `id:` (the event id) and `data:` (the webhook envelope); `: heartbeat` comments', content: { 'text/event-stream': {} } }, ...errors(400, 401, 403) },
    },
  },
  '/api/launches/{id}/events': {
    get: {
      summary: 'The launch event log with each exact envelope (payload), in sequence order',
      security: bearer,
      parameters: [idParam, ...pageParams],
      responses: { 200: { description: '{events: [{id, event, sequence, createdAt, requestId, payload}], pagination}' }, ...errors(400, 401, 403, 404) },
    },
  },
  '/api/webhook-endpoints': {
    post: {
      summary: "Create an endpoint that receives the owner's events of every launch (the secret is returned only here)",
      security: bearer,
      requestBody: endpointBody(['url']),
      responses: { 201: { ...endpoint, description: '{endpoint} with secret; Location header' }, ...errors(400, 401, 403, 415) },
    },
    get: { summary: "The caller's endpoints, newest first", security: bearer, parameters: pageParams, responses: { 200: { description: '{endpoints, pagination}' }, ...errors(400, 401, 403) } },
  },
  '/api/webhook-endpoints/{id}': {
    get: { summary: 'One endpoint (never its secret)', security: bearer, parameters: [idParam], responses: { 200: endpoint, ...errors(401, 403, 404) } },
    patch: {
      summary: 'Change url, events, description, rateLimitPerSecond, ordering; disabled: true pauses its deliveries, false resumes them',
      security: bearer,
      parameters: [idParam],
      requestBody: endpointBody([]),
      responses: { 200: endpoint, ...errors(400, 401, 403, 404, 415) },
    },
    delete: { summary: 'Delete the endpoint; its unsent deliveries are canceled', security: bearer, parameters: [idParam], responses: { 204: { description: 'Deleted' }, ...errors(401, 403, 404) } },
  },
  '/api/webhook-endpoints/{id}/rotate-secret': {
    post: {
      summary: 'New secret; until expiresInSeconds pass every attempt carries both signatures (X-Service-Signature: sha256=<new> sha256=<old>)',
      security: bearer,
      parameters: [idParam],
      requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { expiresInSeconds: { type: 'integer', minimum: 0, maximum: 604800, default: 86400 } } } } } },
      responses: { 200: { ...endpoint, description: '{endpoint} with the new secret' }, ...errors(400, 401, 403, 404, 415) },
    },
  },
  '/api/webhook-endpoints/{id}/recover': {
    post: {
      summary: 'Bring back the failed (dead-lettered) deliveries to the endpoint of the events recorded in [since, until) that have not reached it since: the same deliveries and event ids, a fresh attempt series each',
      security: bearer,
      parameters: [idParam],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', additionalProperties: false, required: ['since'], properties: { since: { type: 'string', format: 'date-time', description: 'not in the future' }, until: { type: ['string', 'null'], format: 'date-time', description: 'exclusive, after since; default now' } } } } },
      },
      responses: { 202: json({ type: 'object', properties: { recovered: { type: 'object', properties: { since: { type: 'string' }, until: { type: ['string', 'null'] }, deliveries: { type: 'integer', description: 'how many were re-queued' }, deliveryIds: { type: 'array', items: { type: 'string' } } } } } }, '{recovered}; 409 when the endpoint is disabled'), ...errors(400, 401, 403, 404, 409, 415) },
    },
  },
  '/api/webhook-endpoints/{id}/stats': {
    get: {
      summary: 'Attempts of the last 24 h: success rate, p50/p99 latency, deliveries by status',
      security: bearer,
      parameters: [idParam],
      responses: { 200: { description: '{stats: {attempts, succeeded, failed, successRate, latencyMs: {p50, p99}, deliveries}}' }, ...errors(401, 403, 404) },
    },
  },
};

const signatureHeaders = [
  { name: 'X-Service-Signature', in: 'header', required: false, schema: { type: 'string' }, description: 'service scheme: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">, space-separated, one per valid secret during a rotation' },
  { name: 'X-Service-Timestamp', in: 'header', required: false, schema: { type: 'string' }, description: 'service scheme: unix seconds of this attempt' },
  { name: 'webhook-id', in: 'header', required: false, schema: { type: 'string' }, description: 'standard scheme: the event id' },
  { name: 'webhook-timestamp', in: 'header', required: false, schema: { type: 'string' }, description: 'standard scheme: unix seconds of this attempt' },
  { name: 'webhook-signature', in: 'header', required: false, schema: { type: 'string' }, description: 'standard scheme: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">, space-separated' },
  { name: 'X-Service-Event', in: 'header', required: true, schema: { type: 'string' } },
  { name: 'X-Service-Event-Id', in: 'header', required: true, schema: { type: 'string' } },
  { name: 'X-Service-Attempt', in: 'header', required: true, schema: { type: 'string' } },
  { name: 'X-Request-ID', in: 'header', required: true, schema: { type: 'string' } },
  {
    name: 'traceparent',
    in: 'header',
    required: false,
    schema: { type: 'string', pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' },
    description: 'W3C trace context, while the service exports traces (OTEL_EXPORTER_OTLP_ENDPOINT): the trace of the API request that created the launch (its own traceparent continued), the span id this attempt\'s',
  },
];

/**
 * OpenAPI `webhooks`: one entry per event kind, its envelope generated from the schemas in
 * `src/webhooks/eventSchemas.ts` (the ones the test route's samples and the recorded events are checked against).
 */
export function webhookEventDocs(schemas: Record<string, Json>, descriptions: Record<string, string> = {}): Json {
  return Object.fromEntries(
    Object.entries(schemas).map(([kind, schema]) => [
      kind,
      {
        post: {
          summary: `${kind} event`,
          description: `${descriptions[kind] ?? ''} Sent to the launch webhookUrl and to every matching webhook endpoint; verify with @launch-service/webhooks (packages/webhooks). The catalog of kinds: GET /api/event-types.`.trim(),
          parameters: signatureHeaders,
          requestBody: { required: true, content: { 'application/json': { schema } } },
          responses: {
            '2XX': { description: 'Received; answer within 10 s, process afterwards' },
            '410': { description: 'Gone: a webhook endpoint answering 410 is disabled' },
            default: { description: 'Any other answer, a timeout or a redirect is a failed attempt, retried on the schedule' },
          },
        },
      },
    ]),
  );
}
