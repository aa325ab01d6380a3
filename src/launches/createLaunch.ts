import { boundOverride } from '../bounds/ownerBounds.js';
import { DEFAULT_OWNER_LIMITS } from '../config/config.js';
import type { Db, Tx } from '../db/database.js';
import type { LaunchRow, StepRow } from '../db/schema.js';
import { compiledQuery } from '../db/compiledQuery.js';
import { lockBound } from '../db/dialect.js';
import type { SecretBox } from '../crypto/secretBox.js';
import type { Clock } from '../lib/clock.js';
import { LimitReachedError } from '../lib/errors.js';
import { newSortableId } from '../lib/ids.js';
import { newHandoff, recordEvent, type OutboxSignal } from '../webhooks/outbox.js';
import type { LaunchRequest } from './request.js';
import { storedRequest, type OperatorFee } from './request.js';
import { stepsFor } from './steps.js';
import { insertLaunch } from './store.js';

export interface CreateLaunchDeps {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  signal: OutboxSignal;
  /** The operator's fee every new launch pays in its first transaction (docs/funding.md). */
  operatorFee?: OperatorFee | undefined;
  /** MAX_LAUNCHES_IN_FLIGHT_PER_OWNER (default {@link DEFAULT_OWNER_LIMITS}); an owner's override replaces it. */
  maxLaunchesInFlight?: number;
}

/** What a create needs besides its deps. */
export interface CreateLaunchArgs {
  owner: string;
  request: LaunchRequest;
  requestId: string;
  /** The funding wallet that pays the launch (docs/funding.md). */
  payer?: string | undefined;
  /** Runs first in the launch's transaction (the funding reservation); a throw creates nothing. */
  reserve?: ((trx: Tx, launchId: string) => Promise<void>) | undefined;
  inTransaction?: (trx: Tx, launchId: string) => Promise<void>;
  /** The id, when it was decided before (a creator-signed launch's plan derives from it). */
  id?: string | undefined;
  /**
   * A creator-signed launch (docs/signing.md): it waits for signatures (`awaiting_signatures`,
   * `launch.awaiting_signatures`) until `deadlineMs` from now; `insert` writes its signing state.
   */
  awaitingSignatures?: { count: number; expiresAt: number; deadlineMs: number; insert(trx: Tx, launchId: string, now: number): Promise<void> } | undefined;
}

/**
 * Persists a validated launch with its steps and emits `launch.queued` in the same transaction.
 * `inTransaction` runs extra writes (the idempotency record) atomically with the launch. An owner
 * with its bound (its override, else `maxLaunchesInFlight`) of launches queued or processing is
 * refused ({@link LimitReachedError}). Returns the launch's id ({@link createLaunchRows}: its rows).
 */
export async function createLaunch(deps: CreateLaunchDeps, args: CreateLaunchArgs): Promise<string> {
  return (await createLaunchRows(deps, args)).launch.id;
}

/** {@link createLaunch}, returning the launch and its steps as inserted: the create's answer needs no read after the commit. */
export async function createLaunchRows(
  deps: CreateLaunchDeps,
  args: CreateLaunchArgs,
): Promise<{ launch: LaunchRow; steps: StepRow[] }> {
  const id = args.id ?? newSortableId('lch');
  const now = deps.clock.now();
  const steps = stepsFor(args.request);
  const awaiting = args.awaitingSignatures;
  let handoff = newHandoff();
  let inserted: { launch: LaunchRow; steps: StepRow[] } | undefined;
  await deps.db.transaction().execute(async (trx) => {
    await lockBound(trx, `launches:${args.owner}`);
    // The owner's override is read with the count: no extra round trip on a create.
    const { n, override } = (await inFlightStatement.first(trx, { owner: args.owner }))!;
    const max = override === null ? (deps.maxLaunchesInFlight ?? DEFAULT_OWNER_LIMITS.launchesInFlight) : Number(override);
    if (Number(n) >= max) {
      throw new LimitReachedError(`This owner already has ${max} launches waiting for signatures, queued or processing, the most allowed; retry when one has finished`, 'MAX_LAUNCHES_IN_FLIGHT_PER_OWNER', max);
    }
    await args.reserve?.(trx, id);
    inserted = await insertLaunch(trx, {
      id,
      owner: args.owner,
      request: JSON.stringify(storedRequest(args.request, deps.operatorFee)),
      webhookUrl: args.request.webhookUrl,
      webhookSecretEnc: deps.secretBox.seal(args.request.webhookSecret),
      requestId: args.requestId,
      payer: args.payer ?? null,
      steps,
      now,
      ...(awaiting ? { status: 'awaiting_signatures' as const, runAfter: now + awaiting.deadlineMs } : {}),
    });
    handoff = newHandoff();
    await awaiting?.insert(trx, id, now);
    await recordEvent(
      trx,
      deps.clock,
      awaiting
        ? { launchId: id, event: 'launch.awaiting_signatures', requestId: args.requestId, data: { count: awaiting.count, expiresAt: new Date(awaiting.expiresAt).toISOString() } }
        : {
            launchId: id,
            event: 'launch.queued',
            requestId: args.requestId,
            data: { status: 'queued', name: args.request.name, ticker: args.request.ticker, totalSupply: args.request.totalSupply.toString(), steps },
          },
      handoff,
    );
    await args.inTransaction?.(trx, id);
  });
  deps.signal.notify(handoff);
  return inserted!;
}

/** The owner's launches in flight and its override of the bound, compiled once (compiledQuery.ts): read on every create. */
const inFlightStatement = compiledQuery<{ owner: string }, { n: number; override: number | null }>((db, p) =>
  db
    .selectFrom('launches')
    .select((eb) => [eb.fn.countAll<number>().as('n'), boundOverride(eb, p.owner, 'launchesInFlight').as('override')])
    .where('owner', '=', p.owner)
    .where('status', 'in', ['awaiting_signatures', 'queued', 'processing']),
);
