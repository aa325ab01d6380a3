/**
 * Every route of the API, wired to its use cases in one place. Each sub-app holds paths below
 * `/api` and is mounted by `createApp`.
 */
import type { Hono } from 'hono';
import type { CapabilityGap } from '../chain/steps/index.js';
import { DEFAULT_OWNER_LIMITS, type OwnerLimits } from '../config/config.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Db, Tx } from '../db/database.js';
import type { DeadLetterRow } from '../db/schema.js';
import type { AppEnv } from '../http/env.js';
import { createBreakerRoutes } from '../http/routes/breakers.js';
import { createDeadLetterRoutes } from '../http/routes/deadLetters.js';
import { createDeliveryRoutes } from '../http/routes/deliveries.js';
import type { StreamLimits } from '../webhooks/stream/streamSlots.js';
import { createEventStreamRoutes } from '../http/routes/eventStream.js';
import { createEventTypeRoutes } from '../http/routes/eventTypes.js';
import { createFundingRoutes } from '../http/routes/funding.js';
import { createFeeRoutes } from '../http/routes/fees.js';
import type { FeeClaims } from '../fees/feeClaims.js';
import type { Funding } from '../funding/funding.js';
import { requestHash } from '../launches/idempotency.js';
import { createHealthRoutes, type HealthResponder } from '../http/routes/health.js';
import { createLaunchDestinationRoutes } from '../http/routes/launchDestination.js';
import { createLaunchRoutes } from '../http/routes/launches.js';
import { createOpenApiRoutes } from '../http/routes/openapi.js';
import { createOwnerBoundRoutes } from '../http/routes/ownerBounds.js';
import { createWebhookEndpointRoutes } from '../http/routes/webhookEndpoints.js';
import { createWebhookTestRoutes } from '../http/routes/webhooks.js';
import type { LaunchRequest, OperatorFee } from '../launches/request.js';
import type { Signing } from '../launches/signing/signing.js';
import type { Clock } from '../lib/clock.js';
import type { OutboxSignal } from '../webhooks/outbox.js';
import type { WebhookEngine } from '../webhooks/engine.js';
import { redeliverEvent } from '../webhooks/redeliver.js';

export type RouteList = Array<[path: string, app: Hono<AppEnv>]>;

export interface WebhookRouteDeps {
  db: Db;
  clock: Clock;
  engine: Pick<WebhookEngine, 'signal' | 'client' | 'breakers' | 'feed'>;
  /** config.webhooks.testSecret: signs `POST /webhooks/test` when the caller gives no secret. */
  testSecret: string;
  /** Requeues a failed launch inside the dead-letter retry's transaction. */
  requeueLaunch(trx: Tx, deadLetter: DeadLetterRow): Promise<void>;
  /** Refuses a launch retry that cannot succeed (a ConflictError), before anything changes. */
  checkLaunchRetry?(deadLetter: DeadLetterRow): Promise<void>;
  /** Wakes the launch runner after a launch retry commits. */
  wakeRunner(): void;
  /** Per-owner bounds (default: DEFAULT_OWNER_LIMITS). */
  ownerLimits?: OwnerLimits;
}

/** The webhook test, delivery and dead-letter routes. */
export function webhookRoutes(deps: WebhookRouteDeps): RouteList {
  const { db, clock, engine } = deps;
  const limits = deps.ownerLimits ?? DEFAULT_OWNER_LIMITS;
  return [
    ['/', createWebhookTestRoutes({ db, clock, client: engine.client, breakers: engine.breakers, testSecret: deps.testSecret })],
    ['/', createDeliveryRoutes({ db, clock, signal: engine.signal, maxRedeliveries: limits.redeliveries })],
    ['/', createBreakerRoutes({ db, breakers: engine.breakers, signal: engine.signal })],
    [
      '/',
      createDeadLetterRoutes({
        db,
        clock,
        requeueLaunch: deps.requeueLaunch,
        checkLaunchRetry: deps.checkLaunchRetry,
        redeliver: async (trx, dl) =>
          void (await redeliverEvent(trx, clock, { eventId: dl.event_id, launchId: dl.launch_id, deliveryId: dl.delivery_id }, limits.redeliveries)),
        wake: (kind) => {
          engine.signal.notify();
          if (kind === 'launch') deps.wakeRunner();
        },
      }),
    ],
  ];
}

export interface ApiRouteDeps extends WebhookRouteDeps {
  /** EVENT_STREAMS_PER_KEY, _PER_OWNER, _MAX: open event streams allowed (docs/api.md). */
  eventStreamLimits?: StreamLimits;
  version: string;
  production: boolean;
  secretBox: SecretBox;
  /** Keys the idempotency request hash (launches/idempotency requestHashKey). */
  requestHashKey: Buffer;
  /** Health for a caller (production: anonymous callers see host labels; see createHealthResponder). */
  health: HealthResponder;
  /** Wakes the dispatcher and the runner after a launch commits. */
  launchSignal: OutboxSignal;
  checkCapabilities(request: LaunchRequest): Promise<CapabilityGap | undefined>;
  /** Owners' funding wallets: every launch reserves its quote; `/funding` routes. */
  funding: Funding;
  /** Creator fees of launches: `/launches/{id}/fees` routes. */
  fees: FeeClaims;
  /** The operator's fee every new launch pays (LAUNCH_FEE_LAMPORTS). */
  operatorFee?: OperatorFee | undefined;
  /** Creator-signed launches (docs/signing.md). */
  signing?: Signing | undefined;
}

/** Every route of the service. */
export function apiRoutes(deps: ApiRouteDeps): RouteList {
  const { db, clock } = deps;
  const limits = deps.ownerLimits ?? DEFAULT_OWNER_LIMITS;
  return [
    ['/', createHealthRoutes(deps.health)],
    ['/', createOpenApiRoutes({ version: deps.version })],
    ['/', createEventTypeRoutes()],
    [
      '/launches',
      createLaunchRoutes({
        db,
        clock,
        secretBox: deps.secretBox,
        production: deps.production,
        requestHashKey: deps.requestHashKey,
        signal: deps.launchSignal,
        checkCapabilities: deps.checkCapabilities,
        maxLaunchesInFlight: limits.launchesInFlight,
        funding: deps.funding,
        operatorFee: deps.operatorFee,
        signing: deps.signing,
      }),
    ],
    ['/funding', createFundingRoutes({ db, funding: deps.funding, hashBody: (body) => requestHash(body, deps.requestHashKey) })],
    ['/owners', createOwnerBoundRoutes({ db, clock, defaults: limits })],
    ['/launches', createFeeRoutes({ fees: deps.fees })],
    ['/launches', createLaunchDestinationRoutes({ db, clock, secretBox: deps.secretBox, production: deps.production, signal: deps.engine.signal })],
    ['/', createEventStreamRoutes({ db, feed: deps.engine.feed, limits: deps.eventStreamLimits })],
    ['/webhook-endpoints', createWebhookEndpointRoutes({
        db,
        clock,
        secretBox: deps.secretBox,
        production: deps.production,
        signal: deps.engine.signal,
        maxEndpoints: limits.endpoints,
      }),],
    ...webhookRoutes(deps),
  ];
}
