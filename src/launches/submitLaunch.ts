import type { CapabilityGap } from '../chain/steps/index.js';
import type { LaunchRow, StepRow } from '../db/schema.js';
import { ConflictError, DomainError, InvalidInputError, NotFoundError, UnavailableError, UnprocessableError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { createLaunchRows, type CreateLaunchDeps } from './createLaunch.js';
import { claimIdempotencyKey, completeIdempotencyKey, isValidIdempotencyKey, releaseIdempotencyKey, requestHash } from './idempotency.js';
import type { Funding } from '../funding/funding.js';
import type { LaunchQuote } from '../funding/quote.js';
import { planFromRequest } from './plan.js';
import { curveRequestProblems } from './curveRequest.js';
import { parseLaunchRequest, storedRequest, type LaunchRequest } from './request.js';
import { stepsFor } from './steps.js';
import { findLaunch, findSteps } from './store.js';
import type { Signing } from './signing/signing.js';
import type { Tx } from '../db/database.js';
import { newSortableId } from '../lib/ids.js';
import { NonRetriableError } from '../lib/retry.js';

export interface SubmitLaunchDeps extends CreateLaunchDeps {
  production: boolean;
  /** Keys the stored idempotency request hash (see requestHashKey). */
  requestHashKey: Buffer;
  /** What the request needs that the chain lacks, with the line that says so; undefined when nothing. */
  checkCapabilities(request: LaunchRequest): Promise<CapabilityGap | undefined>;
  /** The owner's funding (docs/funding.md): every launch reserves its quote in its own transaction. */
  funding?: Pick<Funding, 'prepare' | 'reserve' | 'quote'> | undefined;
  /** Creator-signed launches (docs/signing.md); without it `signing: "creator"` is refused. */
  signing?: Pick<Signing, 'prepare' | 'insert' | 'quote' | 'deadlineMs'> | undefined;
}

export interface SubmitLaunchInput {
  owner: string;
  body: unknown;
  idempotencyKey: string | undefined;
  requestId: string;
  logger: Logger;
}

/** A new launch, or the one an earlier request with the same Idempotency-Key created. */
export type SubmitLaunchOutcome = { kind: 'created' | 'replayed'; launch: LaunchRow; steps: StepRow[] };
type Created = { launch: LaunchRow; steps: StepRow[] };

/**
 * The create-a-launch use case (`POST /api/launches`): the Idempotency-Key, validation, the
 * capability check and the create. Refusals are domain errors. A key is released only when its
 * request was refused before the launch committed, never after (the launch and the key's
 * completion commit in one transaction); a key a crash left in progress is free again on the next
 * request with it. This process's keys in flight are tracked here: on SQLite (one process per
 * file) that is every request still running; on PostgreSQL the claim also waits out another
 * instance's (claimIdempotencyKey).
 */
export function createLaunchSubmitter(deps: SubmitLaunchDeps): (input: SubmitLaunchInput) => Promise<SubmitLaunchOutcome> {
  const inFlight = new Set<string>();
  const slot = (owner: string, key: string) => `${owner}\u0000${key}`;

  return async function submitLaunch(input) {
    const { owner, idempotencyKey: key } = input;
    if (key !== undefined && !isValidIdempotencyKey(key)) {
      throw new InvalidInputError('Idempotency-Key must be 1 to 255 printable characters', { fields: [{ field: 'Idempotency-Key', message: 'invalid' }] });
    }
    if (key === undefined) return { kind: 'created', ...(await validateAndCreate(input, undefined)) };

    const claim = await claimIdempotencyKey(deps.db, {
      owner,
      key,
      hash: requestHash(input.body, deps.requestHashKey),
      now: deps.clock.now(),
      running: (o, k) => inFlight.has(slot(o, k)),
    });
    if (claim.kind === 'reused') throw new UnprocessableError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
    if (claim.kind === 'in_progress') throw new ConflictError('A request with this Idempotency-Key is still being processed', undefined, 'idempotency_in_progress');
    if (claim.kind === 'replay') {
      const launch = await findLaunch(deps.db, claim.launchId, owner);
      if (!launch) throw new NotFoundError('The launch of this Idempotency-Key no longer exists');
      return { kind: 'replayed', launch, steps: await findSteps(deps.db, launch.id) };
    }

    inFlight.add(slot(owner, key));
    let committed = false;
    try {
      return { kind: 'created', ...(await validateAndCreate(input, key, () => (committed = true))) };
    } catch (error) {
      // Refused before the launch existed: the caller may fix the body and retry with the same key.
      if (!committed) await releaseIdempotencyKey(deps.db, owner, key, { onlyInProgress: true });
      throw error;
    } finally {
      inFlight.delete(slot(owner, key));
    }
  };

  async function createCreatorSigned(input: SubmitLaunchInput, request: LaunchRequest, key: string | undefined, onCommit?: () => void): Promise<Created> {
    const launch = await createCreatorSignedLaunch(
      deps,
      input,
      request,
      key === undefined ? undefined : (trx, id) => completeIdempotencyKey(trx, { owner: input.owner, key, launchId: id, status: 202 }),
    );
    onCommit?.();
    return launch;
  }

  /** The launch and its steps as the create's transaction wrote them (its answer reads nothing after the commit). */
  async function validateAndCreate(input: SubmitLaunchInput, key: string | undefined, onCommit?: () => void): Promise<Created> {
    const request = await validateLaunchRequest(deps, input.body, input.logger);
    if (request.signing === 'creator') return createCreatorSigned(input, request, key, onCommit);
    const prepared = deps.funding
      ? await deps.funding.prepare(input.owner, planFromRequest('quote', storedRequest(request, deps.operatorFee)), stepsFor(request)).catch((error: unknown) => {
          input.logger.warn({ err: error }, 'funding check failed');
          throw new UnavailableError('The chain could not be reached to read the funding wallet; retry with the same Idempotency-Key', 5);
        })
      : undefined;
    const funding = deps.funding;
    const launch = await createLaunchRows(deps, {
      owner: input.owner,
      request,
      requestId: input.requestId,
      payer: prepared?.wallet.address,
      reserve: prepared && funding ? (trx, id) => funding.reserve(trx, prepared, id) : undefined,
      inTransaction:
        key === undefined
          ? undefined
          : async (trx, id) => {
              await completeIdempotencyKey(trx, { owner: input.owner, key, launchId: id, status: 202 });
            },
    });
    onCommit?.();
    return launch;
  }
}

/**
 * A creator-signed create (docs/signing.md): the launch is planned under the id it will have, the
 * setup transaction built, and the launch committed `awaiting_signatures` with its signing state.
 * Nobody's funds are reserved: the creator pays, once it signs.
 */
async function createCreatorSignedLaunch(
  deps: SubmitLaunchDeps,
  input: SubmitLaunchInput,
  request: LaunchRequest,
  inTransaction: ((trx: Tx, id: string) => Promise<void>) | undefined,
): Promise<Created> {
  const signing = deps.signing;
  if (!signing) throw new UnprocessableError('unprocessable_entity', 'This service does not run creator-signed launches');
  const id = newSortableId('lch');
  const prepared = await signing.prepare(id, planFromRequest(id, storedRequest(request, deps.operatorFee)), stepsFor(request)).catch((error: unknown) => {
    if (error instanceof NonRetriableError) throw new UnprocessableError('unprocessable_entity', error.message);
    input.logger.warn({ err: error }, 'creator-signed planning failed');
    throw new UnavailableError('The chain could not be reached to plan this launch; retry with the same Idempotency-Key', 5);
  });
  return createLaunchRows(deps, {
    id,
    owner: input.owner,
    request,
    requestId: input.requestId,
    awaitingSignatures: { count: prepared.setups.length, expiresAt: prepared.setupExpiresAt, deadlineMs: signing.deadlineMs, insert: (trx, launchId, now) => signing.insert(trx, launchId, prepared, now) },
    inTransaction,
  });
}

/**
 * Validates a launch body as create does (every bad field named) and checks that the chain has
 * every program it needs; the quote validates with it too, so both refuse alike.
 */
export async function validateLaunchRequest(
  deps: Pick<SubmitLaunchDeps, 'production' | 'checkCapabilities'>,
  body: unknown,
  logger: Logger,
): Promise<LaunchRequest> {
  const parsed = parseLaunchRequest(body, { requireHttps: deps.production, publicDestinationsOnly: deps.production });
  if (!parsed.ok) throw new InvalidInputError('The launch request is invalid', { fields: parsed.errors });
  const curve = await curveRequestProblems(parsed.value);
  if (curve.length > 0) throw new InvalidInputError('The launch request is invalid', { fields: curve });
  const gap = await deps.checkCapabilities(parsed.value).catch((error: unknown) => {
    logger.warn({ err: error }, 'capability check failed');
    throw new UnavailableError('The chain could not be reached to check the programs this launch needs; retry with the same Idempotency-Key', 5);
  });
  // In the words of the chain's own log line (README "The full launch").
  if (gap !== undefined) throw new UnprocessableError('chain_capability_missing', gap.line, { missing: gap.missing });
  return parsed.value;
}

/** `POST /api/launches/quote`: the launch body validated as create does, priced against the owner's wallet; creates nothing. */
export async function quoteLaunch(
  deps: Pick<SubmitLaunchDeps, 'production' | 'checkCapabilities' | 'operatorFee' | 'signing'> & { funding: Pick<Funding, 'quote'> },
  input: { owner: string; body: unknown; logger: Logger },
): Promise<LaunchQuote> {
  const request = await validateLaunchRequest(deps, input.body, input.logger);
  if (request.signing === 'creator') {
    const signing = deps.signing;
    if (!signing) throw new UnprocessableError('unprocessable_entity', 'This service does not run creator-signed launches');
    return signing.quote(planFromRequest('quote', storedRequest(request, deps.operatorFee)), stepsFor(request)).catch((error: unknown) => {
      input.logger.warn({ err: error }, 'quote failed');
      throw new UnavailableError('The chain could not be reached to price this launch; retry in a moment', 5);
    });
  }
  return deps.funding.quote(input.owner, planFromRequest('quote', storedRequest(request, deps.operatorFee)), stepsFor(request)).catch((error: unknown) => {
    if (error instanceof DomainError) throw error;
    input.logger.warn({ err: error }, 'quote failed');
    throw new UnavailableError('The chain could not be reached to price this launch; retry in a moment', 5);
  });
}
