import { ACCOUNT_SIZE, NATIVE_MINT, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { PublicKey, type Keypair } from '@solana/web3.js';
import type { ChainBackend } from '../chain/backend.js';
import { keypairFromSeed } from '../chain/ed25519.js';
import { curveKit } from '../chain/programs/dbc/curve.js';
import { buildPositionPaymentInstructions, claimTargets, dammKit } from '../chain/programs/dbc/dammPosition.js';
import type { HistoryTransaction } from '../chain/history.js';
import { parseJson } from '../lib/json.js';
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
import { claimableLamports, feeRecipient, hasClaimable, launchTokenStandard, presentSources, readFeeSources, type FeeLaunch, type FeeSource } from './sources.js';
import {
  ClaimFencedError,
  completeClaim,
  failClaim,
  findClaimByKey,
  findRunningClaim,
  graduatedPositions,
  insertClaim,
  pendingOf,
  planOf,
  presentClaim,
  recordClaimPending,
  recordClaimPlan,
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
  /** The claim's record (a claim that sent something). */
  id?: string;
}

const WSOL = NATIVE_MINT.toBase58();

/** A position's claim landed and the payment of what it claimed failed: the claim stays running, for its next run to pay. */
class PaymentFailedError extends Error {}

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
    // After graduation the DAMM v2 positions it gave the curve's creator are sources too.
    return { ...launch, positions: await graduatedPositions(db, launchId) };
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

  /** What a claim of the launch would claim now, read from the chain. */
  async function planFor(launch: FeeLaunch): Promise<PlannedSource[]> {
    return (await readFeeSources(chain, launch)).filter(hasClaimable).map((s) =>
      s.kind === 'curve'
        ? { kind: 'curve', address: s.address, quoteLamports: s.state.creatorQuoteFee.toString(), baseAmount: s.state.creatorBaseFee.toString(), baseMint: s.state.baseMint.toBase58() }
        : { kind: 'amm-position', address: s.address, quoteLamports: s.pending.b.toString(), baseAmount: s.pending.a.toString(), baseMint: s.poolState.tokenAMint.toBase58(), pool: s.pool, nftAccount: s.nftAccount },
    );
  }

  /** `POST /api/launches/{id}/fees/claim`; the auto-claimer's claims pass `minLamports` (claimed only while the SOL claimable reaches it). */
  async function claim(owner: string, launchId: string, args: { idempotencyKey?: string | undefined; origin?: 'api' | 'auto'; minLamports?: bigint }): Promise<ClaimOutcome> {
    const launch = await launchOf(owner, launchId);
    const signing = parseJson<{ signing?: unknown; creator?: unknown }>(launch.request, {});
    if (signing.signing === 'creator') {
      // The curve's DBC creator, and the graduated position's owner, is the creator: only its signature claims (docs/signing.md).
      throw new ConflictError(
        `Launch ${launchId} is creator-signed: its creator ${String(signing.creator)} is the curve's DBC creator and owns its DAMM v2 position, and only the creator's own signature can claim their fees. The service holds no key that could; the creator claims them itself, signing with its own key: \`npm run holder -- claim-fees ${launchId} <creator keypair.json>\` (the curve's creator and partner fees), or any Meteora DBC or DAMM v2 client; GET /api/launches/${launchId}/fees shows what is claimable, and each claim on the curve is reported as fees.claimed (docs/signing.md)`,
        { creator: signing.creator },
        'creator_claims_fees',
      );
    }
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
    const plan = await planFor(launch);
    const lamports = plan.reduce((sum, p) => sum + BigInt(p.quoteLamports), 0n);
    const enough = args.minLamports === undefined || lamports >= args.minLamports;
    for (const p of enough ? plan : []) {
      const problem = BigInt(p.quoteLamports) > 0n ? await transferTargetProblem(chain, new PublicKey(recipient), BigInt(p.quoteLamports)) : undefined;
      if (problem) throw new UnprocessableError('unprocessable_entity', `The fee recipient ${recipient} cannot receive ${p.quoteLamports} lamports now: ${problem}; nothing was sent`);
    }

    const now = clock.now();
    const empty = plan.length === 0 || !enough;
    const row: FeeClaimRow = {
      id: newSortableId('fcl', now),
      launch_id: launchId,
      owner,
      idempotency_key: args.idempotencyKey ?? null,
      origin: args.origin ?? 'api',
      state: empty ? 'done' : 'running',
      recipient,
      plan: JSON.stringify(empty ? [] : plan),
      pending: null,
      signatures: empty ? '[]' : null,
      amounts: empty ? '{}' : null,
      last_error: null,
      lease_owner: empty ? null : worker,
      lease_expires_at: null,
      fence: 1,
      created_at: now,
      updated_at: now,
      completed_at: empty ? now : null,
    };
    // Nothing to claim: an empty claim, recorded only when a key must answer it again.
    if (empty) {
      if (args.idempotencyKey !== undefined) await insertOrConflict(row, args.idempotencyKey);
      return { claim: { signatures: [], amounts: {} }, replayed: false };
    }
    await insertOrConflict({ ...row, lease_expires_at: leaseDeadline(db, now, leaseMs) as unknown as number }, args.idempotencyKey);
    const done = await run(launch, row, args.minLamports);
    return { claim: presentClaim(done), replayed: false, id: row.id };
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
    return run(launch, taken, row.origin === 'auto' ? autoClaimMinLamports(launch) : undefined);
  }

  /**
   * Sends each planned source's claim (each transaction recorded first) and completes the claim in
   * one commit. Before the first send the plan is read again from the chain while the claim holds
   * the launch's running slot, so no other claim of the launch can have taken it in between.
   */
  async function run(launch: FeeLaunch, row: FeeClaimRow, minLamports: bigint | undefined): Promise<FeeClaimRow> {
    const logger = deps.logger.child({ launchId: launch.id, claim: row.id });
    const signer = await signerOf(launch);
    const recipient = new PublicKey(row.recipient);
    const baseTokenProgram = launchTokenStandard(launch) === 'spl-token' ? TOKEN_PROGRAM_ID : TOKEN_2022_PROGRAM_ID;
    const pending: Record<string, PendingTx> = pendingOf(row);
    const sent: Sent[] = [];
    try {
      let plan = planOf(row);
      if (Object.keys(pending).length === 0) {
        plan = await planFor(launch);
        const lamports = plan.reduce((sum, p) => sum + BigInt(p.quoteLamports), 0n);
        if (plan.length === 0 || (minLamports !== undefined && lamports < minLamports)) plan = [];
        await recordClaimPlan(db, row, plan, clock.now());
      }
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
      for (const source of plan) {
        sent.push(source.kind === 'curve' ? await claimCurve(ctx, source, { signer, recipient, baseTokenProgram }) : await claimPosition(ctx, row, source, { signer, recipient, ledgerOwner: launch.payer !== null ? launch.owner : undefined, launchId: launch.id }));
      }
    } catch (error) {
      if (error instanceof ClaimFencedError) throw new ConflictError('Another request took this fee claim over; retry shortly', undefined, 'claim_in_progress');
      if (error instanceof PaymentFailedError) {
        // Not failed: the claim's next run (the next claim request of the launch, or the auto-claimer) pays what it claimed.
        logger.warn({ err: error }, 'fee payment failed; the next claim of the launch pays it');
        await releaseClaim(db, row, error.message, clock.now());
        throw new UnavailableError(`The fee claim is not paid yet: ${error.message}. The claimed SOL waits in the claim's wrapped-SOL account; the next claim request of the launch pays it`, 2, 'claim_payment_failed');
      }
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

  /** A curve's creator fee: one transaction, `claim_creator_trading_fee` with the planned amounts as its maximum, paid on in SOL. */
  async function claimCurve(ctx: StepContext, source: PlannedSource, args: { signer: Keypair; recipient: PublicKey; baseTokenProgram: PublicKey }): Promise<Sent> {
    const pool = new PublicKey(source.address);
    const info = await chain.getAccountInfo(pool);
    if (!info) throw new NonRetriableError('program_error', `curve ${source.address} does not exist on the chain`);
    const kit = await curveKit();
    const state = kit.decodeCurveState(info.data);
    const instructions = await kit.buildClaimCreatorFeeInstructions({ pool, state, creator: args.signer.publicKey, recipient: args.recipient, quoteLamports: BigInt(source.quoteLamports), baseAmount: BigInt(source.baseAmount), baseTokenProgram: args.baseTokenProgram });
    // No postcondition: fees accrue again, so only a recorded signature tells a claim landed.
    const result = await sendIdempotent(ctx, { label: `${source.kind}:${source.address}`, type: 'claim_creator_fee', instructions: () => instructions, signers: [], rentLamports: 0, postcondition: async () => false });
    const amounts: Record<string, string> = {};
    if (BigInt(source.quoteLamports) > 0n) amounts[WSOL] = source.quoteLamports;
    if (BigInt(source.baseAmount) > 0n) amounts[source.baseMint] = source.baseAmount;
    const paid = await walletPaid(result.signature, args.signer.publicKey);
    return { source, signature: result.signature, signatures: [result.signature], amounts, spends: paid === undefined ? [] : [{ signature: result.signature, lamports: paid }] };
  }

  /**
   * A DAMM v2 position's fees (docs/funding.md, "Creator fees"): `claim_position_fee` takes no
   * amount and pays all that is pending when it lands, so the claim is two transactions. The first
   * claims the SOL into the claim's own wrapped-SOL account (and the launched token straight into the
   * recipient's token account); the second closes that account into the wallet and transfers exactly
   * the SOL the first one claimed, read from its transaction, to the recipient. Each is recorded
   * before it is sent; the second is built from the first's outcome, so a resume pays the same.
   */
  async function claimPosition(ctx: StepContext, row: FeeClaimRow, source: PlannedSource, args: { signer: Keypair; recipient: PublicKey; ledgerOwner: string | undefined; launchId: string }): Promise<Sent> {
    const kit = await dammKit();
    const owner = args.signer.publicKey;
    const pool = new PublicKey(source.pool!);
    const poolInfo = await chain.getAccountInfo(pool);
    if (!poolInfo) throw new NonRetriableError('program_error', `DAMM v2 pool ${source.pool} does not exist on the chain`);
    const poolState = kit.decodePool(poolInfo.data);
    const wsolRent = await chain.getMinimumBalanceForRentExemption(ACCOUNT_SIZE);
    const instructions = await kit.buildClaimPositionFeeInstructions({ pool, poolState, position: new PublicKey(source.address), nftAccount: new PublicKey(source.nftAccount!), owner, recipient: args.recipient, claimId: row.id, wsolRentLamports: wsolRent });
    const claimed = await sendIdempotent(ctx, { label: `${source.kind}:${source.address}`, type: 'claim_position_fee', instructions: () => instructions, signers: [], rentLamports: wsolRent, postcondition: async () => false });
    const targets = claimTargets({ pool: poolState, owner, recipient: args.recipient, claimId: row.id, position: source.address });
    const tx = await landedTransaction(claimed.signature);
    const delta = (account: PublicKey): bigint => {
      const index = tx.accountKeys.indexOf(account.toBase58());
      const amount = (list: HistoryTransaction['preTokenBalances']) => BigInt(list.find((b) => b.accountIndex === index)?.amount ?? '0');
      return index < 0 ? 0n : amount(tx.postTokenBalances) - amount(tx.preTokenBalances);
    };
    const got: Record<string, bigint> = { [poolState.tokenAMint.toBase58()]: delta(targets.a), [poolState.tokenBMint.toBase58()]: delta(targets.b) };
    const lamports = got[WSOL] ?? 0n;
    const wsolIndex = tx.accountKeys.indexOf(targets.wsol.address.toBase58());
    const wsolHeld = BigInt(tx.postBalances[wsolIndex] ?? 0);
    const paymentLabel = `payment:${source.address}`;
    const payment = await sendIdempotent(ctx, {
      label: paymentLabel,
      type: 'fee_payment',
      instructions: () => buildPositionPaymentInstructions({ owner, wsolAccount: targets.wsol.address, recipient: args.recipient, lamports }),
      signers: [],
      rentLamports: 0,
      // Only this transaction closes the claim's wrapped-SOL account.
      postcondition: async () => (await chain.getAccountInfo(targets.wsol.address)) === null,
    }).catch(async (error: unknown) => {
      if (!(error instanceof NonRetriableError && error.code === 'program_error')) throw error;
      // The claim landed: its SOL waits in the claim's wrapped-SOL account. The failed payment is
      // forgotten, so the claim's next run signs it anew; it cannot pay twice, since a payment pays
      // only by closing that one account in the same transaction.
      const { [paymentLabel]: failed, ...rest } = ctx.pending;
      // A payment that landed and failed took its fee from the wallet: a spend entry, in the
      // commit that forgets it (so a process that dies between the two writes neither).
      const fees = failed && args.ledgerOwner !== undefined ? await landedFees([failed.signature, ...(failed.earlier ?? []).map((e) => e.signature)], owner) : [];
      await db.transaction().execute(async (trx) => {
        const now = clock.now();
        for (const fee of fees) {
          const known = await trx.selectFrom('funding_ledger').select('id').where('owner', '=', args.ledgerOwner!).where('signature', '=', fee.signature).executeTakeFirst();
          if (!known) await insertEntry(trx, { owner: args.ledgerOwner!, launchId: args.launchId, kind: 'spend', lamports: fee.lamports, signature: fee.signature, details: { feeClaim: row.id, failedPayment: true }, now });
        }
        await recordClaimPending(trx, row, rest, now);
      });
      delete ctx.pending[paymentLabel];
      throw new PaymentFailedError(`the claim ${claimed.signature} landed and its payment${failed ? ` ${failed.signature}` : ''} failed: ${error.message}`, { cause: error });
    });
    const amounts = Object.fromEntries(Object.entries(got).filter(([, v]) => v > 0n).map(([m, v]) => [m, v.toString()]));
    // What the wallet spent, the claimed SOL passing through: the claim's fee and rent (the
    // wrapped-SOL account's comes back with the payment), the payment's fee.
    const spends: Array<{ signature: string; lamports: bigint }> = [];
    if (tx.accountKeys[0] === owner.toBase58()) spends.push({ signature: claimed.signature, lamports: tx.preBalances[0]! - tx.postBalances[0]! - (wsolHeld - lamports) });
    const paid = await walletPaid(payment.signature, owner);
    if (paid !== undefined) spends.push({ signature: payment.signature, lamports: paid + (wsolHeld - lamports) });
    return { source, signature: claimed.signature, signatures: [claimed.signature, payment.signature], amounts, spends, paymentSignature: payment.signature };
  }

  /** A landed transaction from the chain's history (on RPC it appears there once finalized: waited for, up to 40 s). */
  async function landedTransaction(signature: string): Promise<HistoryTransaction> {
    const deadline = clock.now() + 40_000;
    for (;;) {
      const tx = await chain.history.getTransaction(signature);
      if (tx) return tx;
      if (clock.now() > deadline) throw new TransientError('chain_unavailable', `claim ${signature} landed but cannot be read yet`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** What each of these transactions that landed took from the wallet, its fee payer (one read each, no wait: one not landed cost nothing). */
  async function landedFees(signatures: readonly string[], wallet: PublicKey): Promise<Array<{ signature: string; lamports: bigint }>> {
    const fees: Array<{ signature: string; lamports: bigint }> = [];
    for (const signature of signatures) {
      const tx = await chain.history.getTransaction(signature).catch(() => null);
      if (!tx || tx.accountKeys[0] !== wallet.toBase58()) continue;
      const lamports = (tx.preBalances[0] ?? 0n) - (tx.postBalances[0] ?? 0n);
      if (lamports > 0n) fees.push({ signature, lamports });
    }
    return fees;
  }

  /** What a transaction took from the wallet when the wallet paid it (its fee payer). */
  async function walletPaid(signature: string, wallet: PublicKey): Promise<bigint | undefined> {
    const tx = await landedTransaction(signature);
    return tx.accountKeys[0] === wallet.toBase58() ? (tx.preBalances[0] ?? 0n) - (tx.postBalances[0] ?? 0n) : undefined;
  }

  async function complete(launch: FeeLaunch, row: FeeClaimRow, signer: Keypair, sent: Sent[]): Promise<FeeClaimRow> {
    const amounts: Record<string, bigint> = {};
    for (const s of sent) for (const [mint, v] of Object.entries(s.amounts)) amounts[mint] = (amounts[mint] ?? 0n) + BigInt(v);
    const total = Object.fromEntries(Object.entries(amounts).map(([m, v]) => [m, v.toString()]));
    const signatures = sent.flatMap((s) => s.signatures);
    await db.transaction().execute(async (trx) => {
      const now = clock.now();
      await completeClaim(trx, row, { signatures, amounts: total, now });
      for (const s of sent) {
        const data: Record<string, unknown> = { pool: s.source.kind === 'curve' ? s.source.address : s.source.pool, claimer: signer.publicKey.toBase58(), amounts: s.amounts, signature: s.signature, kind: 'creator', recipient: row.recipient, source: s.source.kind, auto: row.origin === 'auto' };
        if (s.source.kind === 'amm-position') Object.assign(data, { position: s.source.address, paymentSignature: s.paymentSignature });
        await recordEvent(trx, clock, { launchId: launch.id, event: 'fees.claimed', data });
        for (const spend of launch.payer !== null ? s.spends : []) {
          if (spend.lamports > 0n) await insertEntry(trx, { owner: launch.owner, launchId: launch.id, kind: 'spend', lamports: spend.lamports, signature: spend.signature, details: { feeClaim: row.id }, now });
        }
      }
    });
    if (sent.length > 0) deps.signal.notify();
    return { ...row, state: 'done', signatures: JSON.stringify(signatures), amounts: JSON.stringify(total) };
  }

  /**
   * The auto-claimer's check (docs/funding.md, "Auto-claim"): claims the launch's fees when the SOL
   * claimable reaches `minLamports`, checked again once the claim holds the launch's running slot.
   * Resolves with the claim, or undefined when there was not enough (or another claim got it first).
   */
  async function autoClaim(owner: string, launchId: string, minLamports: bigint): Promise<{ id: string; amounts: Record<string, string> } | undefined> {
    const launch = await launchOf(owner, launchId);
    if (launch.status !== 'complete') return undefined;
    // A claim left running (a payment that failed) is finished by this check whatever is claimable now.
    const unfinished = await findRunningClaim(db, launchId);
    if (!unfinished && claimableLamports(await readFeeSources(chain, launch)) < minLamports) return undefined;
    const outcome = await claim(owner, launchId, { origin: 'auto', minLamports });
    if (outcome.claim.signatures.length === 0) return undefined;
    return { id: outcome.id ?? '', amounts: outcome.claim.amounts };
  }

  /** The same use case with a test hook that runs after each claim transaction is recorded and before it is sent. */
  const withBeforeSend = (beforeSend: NonNullable<FeeClaimsDeps['beforeSend']>) => createFeeClaims({ ...deps, beforeSend });

  return { read, claim, autoClaim, withBeforeSend };
}

/** One claimed source: its transactions, what it paid the recipient and what the wallet spent on it. */
interface Sent {
  source: PlannedSource;
  /** The claim's transaction (the event's `signature`). */
  signature: string;
  /** Every transaction of the source (a position's claim and its payment). */
  signatures: string[];
  amounts: Record<string, string>;
  spends: Array<{ signature: string; lamports: bigint }>;
  paymentSignature?: string;
}

/** The request's `fees.autoClaimMinLamports`, if set. */
export function autoClaimMinLamports(launch: Pick<FeeLaunch, 'request'>): bigint | undefined {
  const min = parseJson<{ fees?: { autoClaimMinLamports?: unknown } }>(launch.request, {}).fees?.autoClaimMinLamports;
  return typeof min === 'string' && /^\d+$/.test(min) ? BigInt(min) : undefined;
}

export interface FeeClaims {
  read: (owner: string, launchId: string) => Promise<{ recipient: string | null; sources: FeeSource[] }>;
  claim: (owner: string, launchId: string, args: { idempotencyKey?: string | undefined; origin?: 'api' | 'auto'; minLamports?: bigint }) => Promise<ClaimOutcome>;
  autoClaim: (owner: string, launchId: string, minLamports: bigint) => Promise<{ id: string; amounts: Record<string, string> } | undefined>;
  withBeforeSend: (beforeSend: NonNullable<FeeClaimsDeps['beforeSend']>) => FeeClaims;
}
