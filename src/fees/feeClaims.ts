import { NATIVE_MINT, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { PublicKey, type Keypair } from '@solana/web3.js';
import type { ChainBackend } from '../chain/backend.js';
import { keypairFromSeed } from '../chain/ed25519.js';
import { curveKit } from '../chain/programs/dbc/curve.js';
import { sendIdempotent } from '../chain/send.js';
import type { PendingTx, StepContext } from '../chain/steps/types.js';
import { transferTargetProblem } from '../chain/transferTarget.js';
import type { Db } from '../db/database.js';
import { leaseDeadline } from '../db/dialect.js';
import type { Funding } from '../funding/funding.js';
import { insertEntry } from '../funding/ledger.js';
import type { Clock } from '../lib/clock.js';
import { ConflictError, NotFoundError, UnavailableError, UnprocessableError } from '../lib/errors.js';
import { newId, newSortableId } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { NonRetriableError, TransientError } from '../lib/retry.js';
import { recordEvent, type OutboxSignal } from '../webhooks/outbox.js';
import { feeRecipient, launchTokenStandard, presentSources, readFeeSources, type FeeLaunch, type FeeSource } from './sources.js';
import {
  ClaimFencedError,
  completeClaim,
  failClaim,
  findClaimByKey,
  findRunningClaim,
  insertClaim,
  pendingOf,
  planOf,
  presentClaim,
  recordClaimPending,
  releaseClaim,
  takeOverClaim,
  type FeeClaimRow,
  type PlannedSource,
} from './store.js';

export interface FeeClaimsDeps {
  db: Db;
  clock: Clock;
  chain: ChainBackend;
  logger: Logger;
  /** The owner's funding wallet of a launch (its signer); absent or null payer: the service's payer. */
  funding?: Pick<Funding, 'payerFor'> | undefined;
  /** Wakes the dispatcher after `fees.claimed` commits. */
  signal: OutboxSignal;
  /** How long a claim's lease lasts (a claim left running longer by a dead process is resumed after it). */
  leaseMs?: number;
  /** Test hook: runs after a claim transaction is recorded and before it is sent. */
  beforeSend?: (row: FeeClaimRow) => Promise<void> | void;
}

/** What `POST /api/launches/{id}/fees/claim` answers. */
export interface ClaimOutcome {
  claim: { signatures: string[]; amounts: Record<string, string> };
  replayed: boolean;
}

const WSOL = NATIVE_MINT.toBase58();

/**
 * Creator fees of a launch (docs/funding.md, "Creator fees"): what is claimable, read from the chain,
 * and claims that pay it to the launch's recipient. A claim is recorded with what it will claim
 * before anything is sent, each transaction is recorded before it is sent (`sendIdempotent`), and a
 * claim left running by a process that died is resumed (its recorded transactions checked on chain
 * first) by the next claim request of the launch. Done is one commit: the claim, `fees.claimed` per
 * source and the ledger's spend of what the wallet paid.
 */
export function createFeeClaims(deps: FeeClaimsDeps): FeeClaims {
  const { db, clock, chain } = deps;
  const leaseMs = deps.leaseMs ?? 60_000;
  const worker = newId('fcw', 6);

  async function launchOf(owner: string, launchId: string): Promise<FeeLaunch> {
    const launch = await db.selectFrom('launches').select(['id', 'owner', 'status', 'payer', 'request', 'results']).where('id', '=', launchId).where('owner', '=', owner).executeTakeFirst();
    if (!launch) throw new NotFoundError(`Launch ${launchId} not found`);
    return launch;
  }

  async function signerOf(launch: FeeLaunch): Promise<Keypair> {
    const paid = launch.payer === null ? undefined : await deps.funding?.payerFor(launch);
    return paid ? keypairFromSeed(Buffer.from(paid.payerSeed)) : chain.payer;
  }

  /** `GET /api/launches/{id}/fees`. */
  async function read(owner: string, launchId: string): Promise<{ recipient: string | null; sources: FeeSource[] }> {
    const launch = await launchOf(owner, launchId);
    return { recipient: feeRecipient(launch) ?? null, sources: presentSources(await readFeeSources(chain, launch)) };
  }

  /** `POST /api/launches/{id}/fees/claim`. */
  async function claim(owner: string, launchId: string, args: { idempotencyKey?: string | undefined; origin?: 'api' | 'auto' }): Promise<ClaimOutcome> {
    const launch = await launchOf(owner, launchId);
    if (args.idempotencyKey !== undefined) {
      const known = await findClaimByKey(db, owner, args.idempotencyKey);
      if (known && known.launch_id !== launchId) throw new UnprocessableError('idempotency_key_reused', 'This Idempotency-Key was used for a claim of another launch');
      if (known?.state === 'done') return { claim: presentClaim(known), replayed: true };
      if (known?.state === 'running') {
        const finished = await resume(launch, known);
        if (!finished) throw new ConflictError('A claim with this Idempotency-Key is still running; retry shortly', undefined, 'idempotency_in_progress');
        return { claim: presentClaim(finished), replayed: true };
      }
    }
    const running = await findRunningClaim(db, launchId);
    if (running && !(await resume(launch, running))) throw new ConflictError('Another fee claim of this launch is running; retry shortly', undefined, 'claim_in_progress');
    if (launch.status !== 'complete') throw new ConflictError(`Launch ${launchId} is ${launch.status}; its fees can be claimed once it is complete`);

    const recipient = feeRecipient(launch);
    if (recipient === undefined) throw new UnprocessableError('unprocessable_entity', 'The launch has no fee recipient (its treasury does not exist)');
    const sources = (await readFeeSources(chain, launch)).filter((s) => s.state.creatorQuoteFee > 0n || s.state.creatorBaseFee > 0n);
    const plan: PlannedSource[] = sources.map((s) => ({ kind: 'curve', address: s.address, quoteLamports: s.state.creatorQuoteFee.toString(), baseAmount: s.state.creatorBaseFee.toString(), baseMint: s.state.baseMint.toBase58() }));
    for (const p of plan) {
      const problem = BigInt(p.quoteLamports) > 0n ? await transferTargetProblem(chain, new PublicKey(recipient), BigInt(p.quoteLamports)) : undefined;
      if (problem) throw new UnprocessableError('unprocessable_entity', `The fee recipient ${recipient} cannot receive ${p.quoteLamports} lamports now: ${problem}; nothing was sent`);
    }

    const now = clock.now();
    const row: FeeClaimRow = {
      id: newSortableId('fcl', now),
      launch_id: launchId,
      owner,
      idempotency_key: args.idempotencyKey ?? null,
      origin: args.origin ?? 'api',
      state: plan.length === 0 ? 'done' : 'running',
      recipient,
      plan: JSON.stringify(plan),
      pending: null,
      signatures: plan.length === 0 ? '[]' : null,
      amounts: plan.length === 0 ? '{}' : null,
      last_error: null,
      lease_owner: plan.length === 0 ? null : worker,
      lease_expires_at: null,
      fence: 1,
      created_at: now,
      updated_at: now,
      completed_at: plan.length === 0 ? now : null,
    };
    // Nothing to claim: an empty claim, recorded only when a key must answer it again.
    if (plan.length === 0) {
      if (args.idempotencyKey !== undefined) await insertOrConflict(row, args.idempotencyKey);
      return { claim: { signatures: [], amounts: {} }, replayed: false };
    }
    await insertOrConflict({ ...row, lease_expires_at: leaseDeadline(db, now, leaseMs) as unknown as number }, args.idempotencyKey);
    const done = await run(launch, row);
    return { claim: presentClaim(done), replayed: false };
  }

  async function insertOrConflict(row: FeeClaimRow, key: string | undefined): Promise<void> {
    try {
      await insertClaim(db, row);
    } catch (error) {
      // The unique indexes: another request took the key, or the launch's running slot, first.
      if (key !== undefined && (await findClaimByKey(db, row.owner, key))) throw new ConflictError('A claim with this Idempotency-Key is still running; retry shortly', undefined, 'idempotency_in_progress');
      if (await findRunningClaim(db, row.launch_id)) throw new ConflictError('Another fee claim of this launch is running; retry shortly', undefined, 'claim_in_progress');
      throw error;
    }
  }

  /** Finishes a running claim whose lease expired; undefined while another request holds it. */
  async function resume(launch: FeeLaunch, row: FeeClaimRow): Promise<FeeClaimRow | undefined> {
    const taken = await takeOverClaim(db, row, { owner: worker, now: clock.now(), leaseMs });
    if (!taken) return undefined;
    deps.logger.info({ launchId: launch.id, claim: row.id }, 'resuming an interrupted fee claim');
    return run(launch, taken);
  }

  /** Sends each planned source's claim (recorded first) and completes the claim in one commit. */
  async function run(launch: FeeLaunch, row: FeeClaimRow): Promise<FeeClaimRow> {
    const logger = deps.logger.child({ launchId: launch.id, claim: row.id });
    const signer = await signerOf(launch);
    const recipient = new PublicKey(row.recipient);
    const baseTokenProgram = launchTokenStandard(launch) === 'spl-token' ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID;
    const pending: Record<string, PendingTx> = pendingOf(row);
    const kit = await curveKit();
    const sent: Array<{ source: PlannedSource; signature: string }> = [];
    try {
      for (const source of planOf(row)) {
        const pool = new PublicKey(source.address);
        const info = await chain.getAccountInfo(pool);
        if (!info) throw new NonRetriableError('program_error', `curve ${source.address} does not exist on the chain`);
        const state = kit.decodeCurveState(info.data);
        const instructions = await kit.buildClaimCreatorFeeInstructions({ pool, state, creator: signer.publicKey, recipient, quoteLamports: BigInt(source.quoteLamports), baseAmount: BigInt(source.baseAmount), baseTokenProgram });
        const ctx = {
          chain,
          payer: signer,
          pending,
          recordPending: async (label: string, tx: PendingTx) => {
            await recordClaimPending(db, row, { ...pending, [label]: tx }, clock.now());
            await deps.beforeSend?.(row);
          },
          logger,
          budget: undefined,
        } as unknown as StepContext;
        // No postcondition: fees accrue again, so only a recorded signature tells a claim landed.
        const result = await sendIdempotent(ctx, { label: `${source.kind}:${source.address}`, type: 'claim_creator_fee', instructions: () => instructions, signers: [], rentLamports: 0, postcondition: async () => false });
        sent.push({ source, signature: result.signature });
      }
    } catch (error) {
      if (error instanceof ClaimFencedError) throw new ConflictError('Another request took this fee claim over; retry shortly', undefined, 'claim_in_progress');
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof NonRetriableError && sent.length === 0 && Object.keys(pending).length === 0) {
        await failClaim(db, row, message, clock.now());
        throw new UnprocessableError('claim_failed', `The fee claim failed: ${message}; nothing was claimed`);
      }
      if (error instanceof NonRetriableError && error.code === 'program_error') {
        await failClaim(db, row, message, clock.now());
        throw new UnprocessableError('claim_failed', `The fee claim failed on chain: ${message}; nothing was claimed`);
      }
      logger.warn({ err: error }, 'fee claim interrupted; the next claim of the launch resumes it');
      await releaseClaim(db, row, message, clock.now());
      if (error instanceof TransientError) throw new UnavailableError(`The chain did not answer; the claim resumes with the next request: ${message}`, 2);
      throw error;
    }
    return complete(launch, row, signer, sent);
  }

  async function complete(launch: FeeLaunch, row: FeeClaimRow, signer: Keypair, sent: Array<{ source: PlannedSource; signature: string }>): Promise<FeeClaimRow> {
    const amounts: Record<string, bigint> = {};
    const events: Array<{ source: PlannedSource; signature: string; amounts: Record<string, string>; paid: number | undefined }> = [];
    for (const { source, signature } of sent) {
      const tx = await chain.history.getTransaction(signature);
      if (!tx) throw new UnavailableError(`claim ${signature} landed but cannot be read yet`, 2);
      const paid = tx.accountKeys[0] === signer.publicKey.toBase58() ? (tx.preBalances[0] ?? 0) - (tx.postBalances[0] ?? 0) : undefined;
      const own: Record<string, string> = {};
      if (BigInt(source.quoteLamports) > 0n) own[WSOL] = source.quoteLamports;
      if (BigInt(source.baseAmount) > 0n) own[source.baseMint] = source.baseAmount;
      for (const [mint, v] of Object.entries(own)) amounts[mint] = (amounts[mint] ?? 0n) + BigInt(v);
      events.push({ source, signature, amounts: own, paid });
    }
    const total = Object.fromEntries(Object.entries(amounts).map(([m, v]) => [m, v.toString()]));
    await db.transaction().execute(async (trx) => {
      const now = clock.now();
      await completeClaim(trx, row, { signatures: sent.map((s) => s.signature), amounts: total, now });
      for (const e of events) {
        await recordEvent(trx, clock, { launchId: launch.id, event: 'fees.claimed', data: { pool: e.source.address, claimer: signer.publicKey.toBase58(), amounts: e.amounts, signature: e.signature, kind: 'creator', recipient: row.recipient, source: e.source.kind } });
        if (launch.payer !== null && e.paid !== undefined && e.paid > 0) {
          await insertEntry(trx, { owner: launch.owner, launchId: launch.id, kind: 'spend', lamports: e.paid, signature: e.signature, details: { feeClaim: row.id }, now });
        }
      }
    });
    deps.signal.notify();
    return { ...row, state: 'done', signatures: JSON.stringify(sent.map((s) => s.signature)), amounts: JSON.stringify(total) };
  }

  /** The same use case with a test hook that runs after each claim transaction is recorded and before it is sent. */
  const withBeforeSend = (beforeSend: NonNullable<FeeClaimsDeps['beforeSend']>) => createFeeClaims({ ...deps, beforeSend });

  return { read, claim, withBeforeSend };
}

export interface FeeClaims {
  read: (owner: string, launchId: string) => Promise<{ recipient: string | null; sources: FeeSource[] }>;
  claim: (owner: string, launchId: string, args: { idempotencyKey?: string | undefined; origin?: 'api' | 'auto' }) => Promise<ClaimOutcome>;
  withBeforeSend: (beforeSend: NonNullable<FeeClaimsDeps['beforeSend']>) => FeeClaims;
}
