import { NONCE_ACCOUNT_LENGTH, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import type { ChainBackend } from '../../chain/backend.js';
import { deriveLaunchKeys } from '../../chain/keys.js';
import { currentNonce, nonceHolds } from '../../chain/landSigned.js';
import type { LaunchPlan, StepExecutor, StepName } from '../../chain/steps/types.js';
import type { Db, DbOrTx } from '../../db/database.js';
import type { LaunchRow, SigningRow, SigningTxRow } from '../../db/schema.js';
import type { Clock } from '../../lib/clock.js';
import { ConflictError, InvalidInputError, NotFoundError, UnprocessableError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { newHandoff, recordEvent, type OutboxSignal } from '../../webhooks/outbox.js';
import { launchKeySecret } from '../chainStepRunner.js';
import { planFromRequest } from '../plan.js';
import { stepsFor } from '../steps.js';
import { findLaunch } from '../store.js';
import { parseJson } from '../../lib/json.js';
import { createPollLoop } from '../../lib/pollLoop.js';
import { assemble, buildNonced, buildSetups, captureLaunch, CLOSE_NONCES, closeNoncesInstructions, nonceAccounts, nonceSeedOf, SETUP, type PlannedTx } from './plan.js';
import { findSetupsToAdvance, findSigning, hasSetupRound, findSigningTxs, insertSigning, insertSigningTxs, movePhase, replaceSetups, storeSignature, type NewSigningTx } from './store.js';
import { verifySignature } from './verify.js';
import { creatorQuote } from './quote.js';

/** Slot time the setup's expiry is estimated with (a blockhash is valid for 150 blocks). */
const SLOT_MS = 400;
/** How often the signing loop moves setup rounds on: a setup offered past its blockhash is replaced within this. */
const SIGNING_LOOP_MS = 2_000;

export interface SigningDeps {
  db: Db;
  clock: Clock;
  chain: ChainBackend;
  /** SECRET_KEY: the launch's derived keys (mint, escrow base) sign their part of each transaction. */
  secretKey: Buffer;
  executors: Partial<Record<StepName, StepExecutor>>;
  /** Wakes the dispatcher and the runner after a commit. */
  signal: OutboxSignal;
  logger: Logger;
  /** SIGNING_DEADLINE. */
  deadlineMs: number;
  /** How often the signing loop looks at setups (default 2 s). */
  loopIntervalMs?: number | undefined;
}

/** A creator-signed launch's signing state, planned before its create commits. */
export interface PreparedSigning {
  creator: string;
  nonceSeed: string;
  nonceCount: number;
  /** The setup transactions (one or more: as many nonce accounts in each as fit). */
  setups: NewSigningTx[];
  setupExpiresAt: number;
}

export type Signing = ReturnType<typeof createSigning>;

/**
 * Creator-signed launches (docs/signing.md): the service plans every transaction, the creator signs
 * them, the runner lands them. Two rounds, because a durable nonce's value exists only once its
 * account is initialized on chain: first the setup transaction that creates the nonce accounts
 * (on a recent blockhash), then, once it landed, every transaction of the launch on those nonces.
 */
export function createSigning(deps: SigningDeps) {
  const { db, clock, chain } = deps;
  const master = launchKeySecret(deps.secretKey);
  const log = deps.logger.child({ component: 'signing' });
  const nonceRent = () => chain.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);

  async function capture(launchId: string, plan: LaunchPlan, steps: readonly StepName[]): Promise<PlannedTx[]> {
    return captureLaunch({ chain, executors: deps.executors }, { plan, keys: deriveLaunchKeys(master, launchId), steps, creator: new PublicKey(plan.creator), logger: log });
  }

  /** When a block height's blockhash stops being valid, estimated from the chain's height now. */
  async function expiryOf(lastValidBlockHeight: number): Promise<number> {
    return clock.now() + Math.max(0, lastValidBlockHeight - (await chain.getBlockHeight())) * SLOT_MS;
  }

  /** Setup transactions for these nonce accounts on a recent blockhash, numbered from `indexes` (then on past `next`). */
  async function freshSetups(creator: PublicKey, nonces: Array<{ address: PublicKey; seed: string }>, indexes: number[], next: number): Promise<{ txs: NewSigningTx[]; expiresAt: number }> {
    const blockhash = await chain.getLatestBlockhash();
    const built = buildSetups(chain, { creator, nonces, rentLamports: await nonceRent(), ...blockhash });
    const free = [...indexes].sort((a, b) => a - b);
    return {
      txs: built.map((b, i) => {
        const idx = free.shift() ?? next + i;
        return { idx, step: SETUP, label: i === 0 ? SETUP : `${SETUP}_${i + 1}`, message: b.message, signers: [creator.toBase58()], serviceSignatures: {}, lastValidBlockHeight: blockhash.lastValidBlockHeight };
      }),
      expiresAt: await expiryOf(blockhash.lastValidBlockHeight),
    };
  }

  /** The setup transaction and how many nonce accounts the launch needs: one per transaction, one for the rent's return. */
  async function prepare(launchId: string, plan: LaunchPlan, steps: readonly StepName[]): Promise<PreparedSigning> {
    const planned = await capture(launchId, plan, steps);
    const nonceSeed = nonceSeedOf(launchId);
    const nonceCount = planned.length + 1;
    const creator = new PublicKey(plan.creator);
    const setup = await freshSetups(creator, await nonceAccounts(creator, nonceSeed, nonceCount), [], 0);
    return { creator: plan.creator, nonceSeed, nonceCount, setups: setup.txs, setupExpiresAt: setup.expiresAt };
  }

  /** The nonces of the launch's accounts, when the setup landed (every account holds one). */
  async function landedNonces(creator: PublicKey, signing: SigningRow): Promise<Array<{ address: PublicKey; nonce: string }> | undefined> {
    const accounts = await nonceAccounts(creator, signing.nonce_seed, signing.nonce_count);
    const nonces = await Promise.all(accounts.map(async ({ address }) => ({ address, nonce: await currentNonce(chain, address) })));
    if (nonces.some((n) => n.nonce === undefined)) return undefined;
    return nonces as Array<{ address: PublicKey; nonce: string }>;
  }

  /** Builds and offers every transaction of the launch on the landed nonces (once, across instances). */
  async function offerLaunch(launch: LaunchRow, signing: SigningRow, nonces: Array<{ address: PublicKey; nonce: string }>): Promise<void> {
    // The launch's transactions come after the setups (numbered 0 on).
    const first = Math.max(...(await findSigningTxs(db, launch.id)).filter((t) => t.step === SETUP).map((t) => t.idx)) + 1;
    const creator = new PublicKey(signing.creator);
    const request = parseJson<Record<string, unknown>>(launch.request, {});
    const planned = await capture(launch.id, planFromRequest(launch.id, request), stepsFor(request as Parameters<typeof stepsFor>[0]));
    if (planned.length + 1 !== nonces.length) throw new Error(`launch ${launch.id}: ${planned.length} transactions planned for ${nonces.length - 1} nonce accounts`);
    const rent = await nonceRent();
    const txs: NewSigningTx[] = planned.map((p, i) => {
      const nonce = nonces[i]!;
      const built = buildNonced(chain, { creator, nonceAccount: nonce.address, nonce: nonce.nonce, instructions: p.instructions, signers: p.signers });
      return { idx: first + i, step: p.step, label: p.label, message: built.message, signers: [signing.creator], serviceSignatures: built.serviceSignatures, nonceAccount: nonce.address.toBase58(), nonce: nonce.nonce };
    });
    const last = nonces[nonces.length - 1]!;
    const others = nonces.slice(0, -1).map((n) => n.address);
    const close = buildNonced(chain, { creator, nonceAccount: last.address, nonce: last.nonce, instructions: closeNoncesInstructions(creator, others, rent), signers: [] });
    txs.push({ idx: first + planned.length, step: CLOSE_NONCES, label: CLOSE_NONCES, message: close.message, signers: [signing.creator], serviceSignatures: {}, nonceAccount: last.address.toBase58(), nonce: last.nonce });
    let handoff = newHandoff();
    await db.transaction().execute(async (trx) => {
      handoff = newHandoff();
      const now = clock.now();
      if (!(await movePhase(trx, launch.id, 'setup', 'launch', now))) return; // another request offered them first
      await insertSigningTxs(trx, launch.id, txs, now);
      await recordEvent(trx, clock, { launchId: launch.id, event: 'launch.awaiting_signatures', requestId: launch.request_id, data: { count: txs.length, expiresAt: new Date(signing.deadline_at).toISOString() } }, handoff);
    });
    deps.signal.notify(handoff);
  }

  /**
   * Moves a launch in its setup round on: each signed setup is sent (again, while its blockhash is
   * valid); once every nonce account is there the launch's transactions are offered; setups that
   * expired or failed are replaced by fresh ones for the nonce accounts still missing. Safe to run
   * from any request on any instance, any number of times.
   */
  async function advance(launch: LaunchRow, signing: SigningRow): Promise<void> {
    if (launch.status !== 'awaiting_signatures' || signing.phase !== 'setup') return;
    const creator = new PublicKey(signing.creator);
    const landed = await landedNonces(creator, signing);
    if (landed) return offerLaunch(launch, signing, landed);
    const setups = (await findSigningTxs(db, launch.id)).filter((t) => t.step === SETUP);
    if (setups.length === 0) return;
    // One blockhash for all of a round's setups.
    const valid = (await chain.getBlockHeight()) <= (setups[0]!.last_valid_block_height ?? 0);
    let stale = !valid;
    const done = new Set<number>();
    for (const setup of setups) {
      if (setup.signature === null) continue;
      const status = await chain.getSignatureStatus(setup.signature);
      if (status && !status.err) {
        done.add(setup.idx);
        continue;
      }
      if (status?.err) {
        log.warn({ launchId: launch.id, err: status.err, setup: setup.idx }, 'setup transaction failed on chain; a fresh one is offered');
        stale = true;
        continue;
      }
      if (!valid) continue;
      const { serialized } = assemble(Buffer.from(setup.message, 'base64'), { [signing.creator]: setup.signature });
      try {
        await chain.sendRawTransaction(serialized);
        await chain.confirmTransaction(setup.signature, setup.last_valid_block_height ?? 0, 'confirmed', { rebroadcast: serialized });
        done.add(setup.idx);
      } catch (error) {
        log.warn({ err: error, launchId: launch.id, setup: setup.idx }, 'setup transaction not landed yet');
      }
    }
    const now = await landedNonces(creator, signing);
    if (now) return offerLaunch(launch, signing, now);
    if (!stale) return;
    // Fresh setups for the nonce accounts not on chain, in place of every setup that did not land.
    const accounts = await nonceAccounts(creator, signing.nonce_seed, signing.nonce_count);
    const missing = [];
    for (const account of accounts) if (!(await chain.getAccountInfo(account.address))) missing.push(account);
    const old = setups.filter((t) => !done.has(t.idx));
    const fresh = await freshSetups(creator, missing, old.map((t) => t.idx), Math.max(...setups.map((t) => t.idx)) + 1);
    await replaceSetups(db, { launchId: launch.id, old: old.map((t) => ({ idx: t.idx, message: t.message })), fresh: fresh.txs, now: clock.now() });
  }

  async function load(launchId: string, owner: string | undefined): Promise<{ launch: LaunchRow; signing: SigningRow }> {
    const launch = await findLaunch(db, launchId, owner);
    if (!launch) throw new NotFoundError(`Launch ${launchId} not found`);
    const signing = await findSigning(db, launch.id);
    if (!signing) throw new NotFoundError(`Launch ${launchId} is not creator-signed: the service signs it (signing "service")`);
    return { launch, signing };
  }

  /**
   * `GET /api/launches/{id}/signing`: a pure read. The setup round is moved on by `submit` and by
   * `advanceSetups` (the service's signing loop), never by a read.
   */
  async function request(launchId: string, owner: string | undefined): Promise<Record<string, unknown>> {
    const { launch, signing } = await load(launchId, owner);
    return present(launch, signing, await findSigningTxs(db, launch.id));
  }

  /**
   * One turn of the signing loop (every instance runs one): each launch in its setup round whose
   * setup was signed (sent, landed: its transactions offered) or whose unsigned setup's blockhash
   * expired (a fresh one offered) is moved on. Resolves with how many it looked at.
   */
  async function advanceSetups(limit = 16): Promise<number> {
    if (!(await hasSetupRound(db))) return 0;
    const rows = await findSetupsToAdvance(db, { height: await chain.getBlockHeight(), limit });
    for (const row of rows) {
      const launch = await findLaunch(db, row.launch_id, undefined);
      const signing = await findSigning(db, row.launch_id);
      if (!launch || !signing) continue;
      await advance(launch, signing).catch((error: unknown) => log.warn({ err: error, launchId: row.launch_id }, 'moving the setup round on failed; retried on the next turn'));
    }
    return rows.length;
  }

  // The signing loop: signed setups sent and seen landed, expired ones offered fresh, off the read path.
  const loop = createPollLoop({ logger: log, what: 'moving creator-signed setups on', intervalMs: deps.loopIntervalMs ?? SIGNING_LOOP_MS, turn: async () => (await advanceSetups(), false) });

  async function present(launch: LaunchRow, signing: SigningRow, rows: SigningTxRow[]): Promise<Record<string, unknown>> {
    const error = parseJson<{ code?: string } | null>(launch.error, null);
    const status = launch.status === 'awaiting_signatures' ? 'awaiting_signatures' : error?.code === 'signature_timeout' ? 'expired' : 'signed';
    const setup = rows.find((r) => r.step === SETUP);
    const expiresAt = signing.phase === 'setup' && setup ? await expiryOf(setup.last_valid_block_height ?? 0) : signing.deadline_at;
    return {
      status,
      expiresAt: new Date(Math.min(expiresAt, signing.deadline_at)).toISOString(),
      deadlineAt: new Date(signing.deadline_at).toISOString(),
      transactions: rows.map((r) => ({ index: r.idx, step: r.step, message: r.message, signers: parseJson<string[]>(r.signers, []), signed: r.signature !== null })),
    };
  }

  /** `POST /api/launches/{id}/signatures`: every signature verified first; one wrong and nothing is stored. */
  async function submit(launchId: string, owner: string | undefined, body: unknown): Promise<Record<string, unknown>> {
    const entries = parseSignatures(body);
    const { launch, signing } = await load(launchId, owner);
    if (launch.status !== 'awaiting_signatures') throw new ConflictError(`Launch ${launch.id} is ${launch.status}; it takes no more signatures`);
    if (clock.now() >= signing.deadline_at) throw new ConflictError(`The signing deadline of launch ${launch.id} passed at ${new Date(signing.deadline_at).toISOString()}`);
    const rows = await findSigningTxs(db, launch.id);
    const verified = entries.map(({ index, signature }, i) => {
      const row = rows.find((r) => r.idx === index);
      if (!row) throw new InvalidInputError(`No transaction ${index} is offered for signing`, { fields: [{ field: `signatures.${i}.index`, message: `no transaction ${index}; GET the signing request for the current ones` }] });
      if (!verifySignature(Buffer.from(row.message, 'base64'), bs58.decode(signature), signing.creator)) {
        throw new UnprocessableError('invalid_signature', `The signature of transaction ${index} is not the creator's (${signing.creator}) signature of its message; nothing was stored`, { index });
      }
      return { row, signature };
    });
    // A setup signed after its blockhash expired can never land: refused, nothing stored (the
    // signing loop offers a fresh setup in its place).
    const lateSetups = verified.filter((v) => v.row.step === SETUP && v.row.signature === null);
    if (lateSetups.length > 0) {
      const height = await chain.getBlockHeight();
      const late = lateSetups.find((v) => height > (v.row.last_valid_block_height ?? 0));
      if (late) {
        throw new ConflictError(
          `Setup transaction ${late.row.idx} expired before it was signed (its blockhash is no longer valid); nothing was stored. A fresh setup is offered within seconds: GET the signing request and sign that one`,
          { index: late.row.idx },
          'setup_expired',
        );
      }
    }
    // The rent return comes first (docs/signing.md): once any launch transaction is signed, the
    // transaction that gives the nonce accounts' rent back on a failure or timeout is signed too.
    const close = rows.find((r) => r.step === CLOSE_NONCES);
    if (close && close.signature === null && verified.length > 0 && !verified.some((v) => v.row.idx === close.idx)) {
      throw new InvalidInputError(`Sign close_nonces (transaction ${close.idx}) with the first of the launch's transactions: it returns the nonce accounts' rent should the launch fail or time out; nothing was stored`, {
        fields: [{ field: 'signatures', message: `must include transaction ${close.idx} (close_nonces) until it is signed` }],
      });
    }
    let handoff = newHandoff();
    let setupSigned = false;
    await db.transaction().execute(async (trx) => {
      handoff = newHandoff();
      const now = clock.now();
      for (const { row, signature } of verified) {
        if (row.signature !== null) continue;
        if (!(await storeSignature(trx, { launchId: launch.id, idx: row.idx, message: row.message, signature, now }))) {
          throw new ConflictError(`Transaction ${row.idx} changed while it was being signed (a fresh setup was offered); GET the signing request and sign again`);
        }
        if (row.step === SETUP) setupSigned = true;
      }
      await queueWhenSigned(trx, launch, now, handoff);
    });
    deps.signal.notify(handoff);
    const current = await load(launch.id, owner);
    if (setupSigned) await advance(current.launch, current.signing);
    const after = await load(launch.id, owner);
    return present(after.launch, after.signing, await findSigningTxs(db, launch.id));
  }

  /** Once every transaction of the launch round is signed: `queued`, `launch.queued`, and the runner lands them. */
  async function queueWhenSigned(trx: DbOrTx, launch: LaunchRow, now: number, handoff: ReturnType<typeof newHandoff>): Promise<void> {
    const signing = await findSigning(trx, launch.id);
    if (signing?.phase !== 'launch') return;
    const rows = await findSigningTxs(trx, launch.id);
    if (rows.some((r) => r.signature === null)) return;
    if (!(await movePhase(trx, launch.id, 'launch', 'signed', now))) return;
    const r = await trx
      .updateTable('launches')
      .set({ status: 'queued', run_after: now, updated_at: now })
      .where('id', '=', launch.id)
      .where('status', '=', 'awaiting_signatures')
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) throw new ConflictError(`Launch ${launch.id} is no longer waiting for signatures`);
    const request = parseJson<Record<string, unknown>>(launch.request, {});
    await recordEvent(trx, clock, { launchId: launch.id, event: 'launch.queued', requestId: launch.request_id, data: { status: 'queued', name: request.name, ticker: request.ticker, totalSupply: request.totalSupply, steps: stepsFor(request as Parameters<typeof stepsFor>[0]) } }, handoff);
  }

  /** The creator-signed transactions of a step, ready to send (for the runner). */
  async function signedFor(launchId: string, step: string): Promise<{ payer: string; transactions: Record<string, { signature: string; serialized: string; nonceAccount: string; nonce: string }> }> {
    const signing = await findSigning(db, launchId);
    if (signing?.phase !== 'signed') throw new Error(`launch ${launchId} is not signed`);
    const transactions: Record<string, { signature: string; serialized: string; nonceAccount: string; nonce: string }> = {};
    for (const row of await findSigningTxs(db, launchId)) {
      if (row.step !== step || row.signature === null || row.nonce_account === null || row.nonce === null) continue;
      const { serialized, signature } = assemble(Buffer.from(row.message, 'base64'), { ...parseJson<Record<string, string>>(row.service_signatures, {}), [signing.creator]: row.signature });
      transactions[row.label] = { signature, serialized: serialized.toString('base64'), nonceAccount: row.nonce_account, nonce: row.nonce };
    }
    return { payer: signing.creator, transactions };
  }

  /** The signed `close_nonces` transaction of a launch, in any phase; undefined until the creator signed it. */
  async function signedClose(launchId: string): Promise<{ signature: string; serialized: string; nonceAccount: string; nonce: string } | undefined> {
    const signing = await findSigning(db, launchId);
    const row = (await findSigningTxs(db, launchId)).find((r) => r.step === CLOSE_NONCES);
    if (!signing || row?.signature == null || row.nonce_account === null || row.nonce === null) return undefined;
    const { serialized, signature } = assemble(Buffer.from(row.message, 'base64'), { ...parseJson<Record<string, string>>(row.service_signatures, {}), [signing.creator]: row.signature });
    return { signature, serialized: serialized.toString('base64'), nonceAccount: row.nonce_account, nonce: row.nonce };
  }

  /**
   * Before a dead letter's retry: a creator-signed launch whose `close_nonces` landed (the nonce
   * accounts' rent back with the creator) can land none of its signed transactions again, so its
   * retry is refused (`409 nonce_rent_returned`) instead of failing once more.
   */
  async function assertRetryable(launchId: string): Promise<void> {
    const close = await signedClose(launchId);
    if (!close) return;
    const status = await chain.getSignatureStatus(close.signature);
    let returned = status !== null && !status.err;
    if (!returned && !(await nonceHolds(chain, close))) {
      // No status (a node that no longer keeps it): the nonce accounts it closes tell.
      const others = (await findSigningTxs(db, launchId)).filter((r) => r.nonce_account !== null && r.step !== CLOSE_NONCES);
      for (const row of others) if (!(await chain.getAccountInfo(new PublicKey(row.nonce_account!)))) returned = true;
    }
    if (returned) {
      throw new ConflictError(
        `Launch ${launchId} is creator-signed and its nonce accounts were closed when it failed (their rent went back to the creator in ${close.signature}); none of its signed transactions can land again, so a retry cannot succeed. Resolve the dead letter and create a new launch`,
        { launchId, closeNonces: close.signature },
        'nonce_rent_returned',
      );
    }
  }

  return {
    prepare,
    signedClose,
    assertRetryable,
    /** `POST /api/launches/quote` with `signing: "creator"`: the creator's costs and balance; nothing reserved. */
    quote: (plan: LaunchPlan, steps: readonly StepName[]) => creatorQuote(chain, plan, steps),
    /** Inside the launch's own transaction: its signing state and setup. */
    insert: (trx: DbOrTx, launchId: string, prepared: PreparedSigning, now: number) =>
      insertSigning(trx, { launchId, creator: prepared.creator, nonceSeed: prepared.nonceSeed, nonceCount: prepared.nonceCount, deadlineAt: now + deps.deadlineMs, now, setups: prepared.setups }),
    deadlineMs: deps.deadlineMs,
    request,
    submit,
    advanceSetups,
    start: () => loop.start(),
    stop: () => loop.stop(),
    signedFor,
  };
}

/** The body of `POST /signatures`, every bad field named. */
function parseSignatures(body: unknown): Array<{ index: number; signature: string }> {
  const list = (body as { signatures?: unknown } | null)?.signatures;
  if (typeof body !== 'object' || body === null || !Array.isArray(list) || list.length === 0 || list.length > 64) {
    throw new InvalidInputError('The body must be {"signatures": [{"index", "signature"}]} with 1 to 64 entries', { fields: [{ field: 'signatures', message: 'must be an array of 1 to 64 {index, signature}' }] });
  }
  const fields: Array<{ field: string; message: string }> = [];
  const out = list.map((entry: unknown, i) => {
    const { index, signature } = (entry ?? {}) as { index?: unknown; signature?: unknown };
    if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0) fields.push({ field: `signatures.${i}.index`, message: 'must be a whole number of at least 0' });
    let ok = typeof signature === 'string' && signature.length <= 100;
    if (ok) {
      try {
        ok = bs58.decode(signature as string).length === 64;
      } catch {
        ok = false;
      }
    }
    if (!ok) fields.push({ field: `signatures.${i}.signature`, message: 'must be a base58 Ed25519 signature (64 bytes)' });
    return { index: index as number, signature: signature as string };
  });
  if (fields.length > 0) throw new InvalidInputError('The signatures are invalid', { fields });
  return out;
}
