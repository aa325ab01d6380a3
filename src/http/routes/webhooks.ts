import { Hono } from 'hono';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { BreakerRegistry } from '../../webhooks/breakerRegistry.js';
import type { WebhookHttpClient } from '../../webhooks/httpClient.js';
import { endpointHost } from '../../webhooks/endpointKey.js';
import { isWebhookEventKind, sampleEnvelope, WEBHOOK_EVENT_KINDS, type WebhookEventKind } from '../../webhooks/sampleEvents.js';
import { buildDeliveryHeaders } from '../../webhooks/signature.js';
import { invalidRequest } from '../errors.js';
import type { AppEnv } from '../env.js';
import type { AuthContext } from '../env.js';
import { requireAuth } from '../middleware/auth.js';
import { readJson } from '../middleware/bodyGuards.js';

export interface WebhookTestRouteDeps {
  db: Db;
  clock: Clock;
  /** The dispatcher's own client: same SSRF guard, timeout and bounded reads as real deliveries. */
  client: WebhookHttpClient;
  breakers: Pick<BreakerRegistry, 'stateOf'>;
  /** config.webhooks.testSecret, used when the caller sends no webhookSecret. */
  testSecret: string;
}

type FieldError = { field: string; message: string };

function parseTestRequest(body: unknown): { webhookUrl: string; event: WebhookEventKind; webhookSecret: string | undefined } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('Request body must be a JSON object');
  const { webhookUrl, event, webhookSecret } = body as Record<string, unknown>;
  const fields: FieldError[] = [];
  if (typeof webhookUrl !== 'string' || webhookUrl.length > 2048) fields.push({ field: 'webhookUrl', message: 'must be a URL string of at most 2048 characters' });
  else if (!URL.canParse(webhookUrl) || !/^https?:$/.test(new URL(webhookUrl).protocol)) fields.push({ field: 'webhookUrl', message: 'must be an http(s) URL' });
  if (typeof event !== 'string' || !isWebhookEventKind(event)) fields.push({ field: 'event', message: `must be one of ${WEBHOOK_EVENT_KINDS.join(', ')}` });
  if (webhookSecret !== undefined && (typeof webhookSecret !== 'string' || webhookSecret.length < 1 || webhookSecret.length > 1024)) {
    fields.push({ field: 'webhookSecret', message: 'must be a string of 1 to 1024 characters' });
  }
  if (fields.length > 0) throw invalidRequest('The webhook test request is invalid', { fields, validKinds: WEBHOOK_EVENT_KINDS });
  return { webhookUrl: webhookUrl as string, event: event as WebhookEventKind, webhookSecret: webhookSecret as string | undefined };
}

/** How many of an owner's latest launches count as its destinations for the test route's breaker. */
const RECENT_LAUNCHES = 50;

/**
 * Whether the caller may see the breaker of `host`: admin, or the host is one of its own
 * destinations (an endpoint's, or the webhook URL of one of its latest launches). Another owner's
 * breaker state says where that owner delivers and how its receiver fares.
 */
async function ownsHost(db: Db, auth: AuthContext, host: string): Promise<boolean> {
  if (auth.isAdmin) return true;
  const endpoints = await db.selectFrom('webhook_endpoints').select('url').where('owner', '=', auth.owner).execute();
  if (endpoints.some((e) => endpointHost(e.url) === host)) return true;
  const launches = await db.selectFrom('launches').select('webhook_url').where('owner', '=', auth.owner).orderBy('created_at', 'desc').limit(RECENT_LAUNCHES).execute();
  return launches.some((l) => endpointHost(l.webhook_url) === host);
}

/** `POST /webhooks/test` (docs/delivery.md): one signed sample event, one attempt, no retry. Mount at `/`. */
export function createWebhookTestRoutes(deps: WebhookTestRouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/webhooks/test', async (c) => {
    const auth = requireAuth(c);
    const input = parseTestRequest(await readJson(c));
    const now = deps.clock.now();
    const envelope = sampleEnvelope(input.event, now);
    const body = JSON.stringify(envelope);
    const headers = buildDeliveryHeaders({
      secrets: [input.webhookSecret ?? deps.testSecret],
      body,
      event: envelope.event,
      eventId: envelope.id,
      attempt: 1,
      requestId: c.get('requestId'),
      timestampSeconds: Math.floor(now / 1000),
    });
    const outcome = await deps.client.send({ url: input.webhookUrl, body, headers });
    const host = endpointHost(input.webhookUrl);
    c.get('logger').info({ component: 'webhook-test', host, event: envelope.event, statusCode: outcome.statusCode, durationMs: outcome.durationMs, errorClass: outcome.errorClass, detail: outcome.logDetail }, 'webhook test sent');
    return c.json({
      result: {
        delivered: outcome.ok,
        event: envelope.event,
        eventId: envelope.id,
        statusCode: outcome.statusCode,
        durationMs: outcome.durationMs,
        responseBody: outcome.responseBody,
        ...(outcome.ok ? {} : { error: { class: outcome.errorClass, message: outcome.errorMessage } }),
        signedWith: input.webhookSecret === undefined ? 'server_test_secret' : 'provided',
        ...((await ownsHost(deps.db, auth, host)) ? { breaker: { host, ...deps.breakers.stateOf(host) } } : {}),
      },
    });
  });

  return app;
}
