import type { SecretBox } from '../../crypto/secretBox.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { openSpan, tracingOn, type SpanHandle } from '../../lib/tracing.js';
import type { BreakerRegistry } from '../breakerRegistry.js';
import type { EndpointPace } from '../endpointPace.js';
import { signingSecrets } from '../endpoints/signing.js';
import type { AttemptOutcome, WebhookHttpClient } from '../httpClient.js';
import type { SettleResult } from '../settle.js';
import { buildDeliveryHeaders } from '../signature.js';
import type { ClaimedDelivery } from '../sql/claimWork.js';
import { eventTraceParent } from '../sql/deliveryQueries.js';
import { renewClaim } from '../sql/settleDeliveries.js';

export interface AttemptDeps {
  db: Db;
  /** The dispatcher's lease owner id. */
  owner: string;
  clock: Clock;
  logger: Logger;
  /** Opens sealed secrets (remembering them: withOpenCache). */
  box: SecretBox;
  client: WebhookHttpClient;
  breakers: BreakerRegistry;
  pace: EndpointPace;
  leaseMs: number;
}

/** A delivery to attempt: what its claim returned, and whether it is a breaker's half-open trial. */
export type AttemptItem = ClaimedDelivery & { trial: boolean };

/**
 * One attempt of a claimed delivery (docs/delivery.md): open its secret(s), sign the body afresh,
 * send it through the endpoint's breaker with the guarded HTTP client, and record how long the
 * endpoint took (endpointPace.ts). It never writes the delivery's state: the outcome goes to the
 * settle batcher. While tracing is on the attempt is a span under its event's.
 */
export interface Attempter {
  send(item: AttemptItem, startedAt: number): Promise<AttemptOutcome>;
  /** Logs a settled attempt. */
  log(item: AttemptItem, outcome: AttemptOutcome, result: SettleResult): void;
}

export function createAttempter(deps: AttemptDeps): Attempter {
  const { breakers, pace } = deps;
  /** Each event's traceparent, read once (a launch's events go to a few URLs each). */
  const traceParents = new Map<string, string | null>();

  async function send(item: AttemptItem, startedAt: number): Promise<AttemptOutcome> {
    const { ctx } = item;
    let secrets: string[] | undefined;
    try {
      secrets = signingSecrets(ctx, startedAt, deps.box);
    } catch {
      secrets = undefined;
    }
    if (secrets === undefined) {
      // Not the endpoint's fault, so it does not count against the host's breaker.
      return { ok: false, statusCode: null, durationMs: 0, responseBody: null, errorClass: 'secret_unavailable', errorMessage: 'webhook secret cannot be decrypted with SECRET_KEY' };
    }
    const headers = buildDeliveryHeaders({
      secrets,
      scheme: ctx.scheme,
      body: ctx.body,
      event: ctx.event,
      eventId: ctx.eventId,
      attempt: item.attempt,
      requestId: ctx.requestId ?? newId('req'),
      timestampSeconds: Math.floor(startedAt / 1000),
    });
    // Sent again at once (a stale pooled socket, our own stall) only under a lease that covers a
    // whole attempt, as at the start; after a stall past half of it, only once the lease is renewed
    // under this claim's token — another dispatcher may have taken the delivery over and sent it meanwhile.
    const mayResend = () => resendable(item);
    // Tracing on: the attempt is a span under the event's context, and the delivery carries its own.
    const span = tracingOn() ? await attemptSpan(item) : undefined;
    if (span) headers.traceparent = span.traceparent;
    let outcome: AttemptOutcome;
    try {
      outcome = await breakers.execute(item.endpoint, item.trial, () => deps.client.send({ url: item.url, body: ctx.body, headers, mayResend }));
    } catch (error) {
      span?.end(error);
      throw error;
    }
    if (span) {
      span.setAttributes({ ...(outcome.statusCode === null ? {} : { 'http.response.status_code': outcome.statusCode }), ...(outcome.ok ? {} : { 'error.type': outcome.errorClass ?? 'failed' }) });
      if (!outcome.ok) span.fail(outcome.errorMessage ?? outcome.errorClass ?? 'failed');
      span.end();
    }
    // How long the endpoint took, unless the attempt never reached it or our own lag made it slow.
    if (!outcome.serviceFault && outcome.errorClass !== 'blocked_destination') pace.record(item.endpoint, outcome.durationMs);
    return outcome;
  }

  /** A span for an attempt (tracing on), a child of the span that recorded its event. */
  async function attemptSpan(item: AttemptItem): Promise<SpanHandle | undefined> {
    const { ctx } = item;
    let parent = ctx.traceParent ?? traceParents.get(ctx.eventId);
    if (parent === undefined) {
      parent = await eventTraceParent(deps.db, ctx.eventId).catch(() => null);
      if (traceParents.size >= 1000) traceParents.clear();
      traceParents.set(ctx.eventId, parent);
    }
    return openSpan(`webhook.attempt ${ctx.event}`, {
      kind: 'client',
      parent,
      attributes: {
        'http.request.method': 'POST',
        'server.address': item.host,
        'webhook.delivery_id': item.id,
        'webhook.event_id': ctx.eventId,
        'webhook.event': ctx.event,
        'webhook.attempt': item.attempt,
        'webhook.endpoint_id': ctx.endpointId ?? '',
        'launch.id': item.launchId,
      },
    });
  }

  /** The lease covers a whole attempt again: half of it is left, or it was renewed under this claim's token (test/webhooks/stalledPastLease.test.ts). */
  async function resendable(item: AttemptItem): Promise<boolean> {
    const now = deps.clock.now();
    if (item.leaseExpiresAt - now >= deps.leaseMs / 2) return true;
    try {
      if (!(await renewClaim(deps.db, { id: item.id, owner: deps.owner, token: item.token }, now, deps.leaseMs))) return false;
    } catch (error) {
      deps.logger.warn({ err: error, deliveryId: item.id }, 'could not renew a webhook lease to send again; the attempt fails as ours');
      return false;
    }
    item.leaseExpiresAt = now + deps.leaseMs;
    return true;
  }

  return {
    send,
    log(item, outcome, result) {
      // The fields are not even built for a level that is off (one object per delivery).
      if (!deps.logger.isLevelEnabled(outcome.ok ? 'info' : 'warn')) return;
      const fields = { deliveryId: item.id, launchId: item.launchId, eventId: item.eventId, host: item.host, attempt: item.attempt, event: item.ctx.event, trial: item.trial };
      if (outcome.ok) deps.logger.info({ ...fields, statusCode: outcome.statusCode, durationMs: outcome.durationMs, result }, 'webhook delivered');
      else deps.logger.warn({ ...fields, statusCode: outcome.statusCode, durationMs: outcome.durationMs, errorClass: outcome.errorClass, result, error: outcome.errorMessage, detail: outcome.logDetail }, 'webhook attempt failed');
    },
  };
}
