import { PublicKey, type Keypair } from '@solana/web3.js';
import type { ChainBackend } from '../../chain/backend.js';
import { keypairFromSeed } from '../../chain/ed25519.js';
import { deriveSeed } from '../../chain/keys.js';
import { curveKit, type CurveMigration, type CurveState } from '../../chain/programs/dbc/curve.js';
import { DAMM_V2_PROGRAM_ID, JUPITER_LOCK_PROGRAM_ID } from '../../chain/programs/programIds.js';
import { sendIdempotent } from '../../chain/send.js';
import type { PendingTx, StepContext } from '../../chain/steps/types.js';
import { decodeVestingEscrow } from '../../chain/programs/jupiterLock/escrowAccount.js';
import { updateVestingEscrowRecipientInstruction } from '../../chain/programs/jupiterLock/instructions.js';
import { parseJson } from '../../lib/json.js';
import { escrowTotal } from '../decoders/jupiterLock.js';
import { insertWatches } from '../store.js';
import type { Db } from '../../db/database.js';
import type { Funding } from '../../funding/funding.js';
import { closeReservation, insertEntry } from '../../funding/ledger.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { createPollLoop, type PollLoop } from '../../lib/pollLoop.js';
import { backoffMs, TransientError } from '../../lib/retry.js';
import { poolGraduated } from '../events.js';
import { recordEvent, type OutboxSignal } from '../../webhooks/outbox.js';
import { graduationDue } from './signal.js';
import { claimDueMigrations, completeMigration, MigrationFencedError, pendingOf, recordMigrationPending, retryMigrationLater, type MigrationRow } from './store.js';

export interface GraduatorOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  chain: ChainBackend;
  /** The launch key master secret (src/launches/chainStepRunner.ts `launchKeySecret`): the position NFT keys derive from it. */
  keySecret: Buffer;
  /** The owner's funding wallet of a launch (its payer, or the owner's wallet for a creator-signed curve); absent: the service's payer pays (launches made before funding). */
  funding?: Pick<Funding, 'payerFor' | 'ownerPayer'> | undefined;
  signal: OutboxSignal;
  leaseMs: number;
  pollIntervalMs?: number;
  /** Test hook: runs after the migration transaction is recorded and before it is sent. */
  beforeSend?: (row: MigrationRow) => Promise<void> | void;
}

/** The label of the migration's recorded transaction. */
const LABEL = 'migration_damm_v2';
/** How long a curve's vesting escrow is watched (WATCH_TTL's default). */
const VESTING_WATCH_TTL_MS = 365 * 86_400_000;

/** The request's `vesting.beneficiary`, if any. */
function beneficiaryOf(request: string): PublicKey | undefined {
  const beneficiary = parseJson<{ vesting?: { beneficiary?: unknown } }>(request, {}).vesting?.beneficiary;
  return typeof beneficiary === 'string' ? new PublicKey(beneficiary) : undefined;
}

/** Whether a launch's request is creator-signed (docs/signing.md). */
const creatorSigned = (request: string): boolean => parseJson<{ signing?: unknown }>(request, {}).signing === 'creator';

/**
 * The graduation job (docs/programs.md, "Graduation"): claims due graduations (`curve_migrations`)
 * with a lease and a fencing token and runs DBC's `migration_damm_v2`, paid by the owner's funding
 * wallet, through the same record-then-send procedure as a launch step (`sendIdempotent`): the
 * signed transaction is recorded under the fence before it is sent, and a claim that finds one
 * recorded checks its status on chain first. Done is one commit under the fence: the row,
 * `pool.graduated`, and the ledger's spend entry. A curve someone else migrated first is reported too
 * (`paidBy: null`, no ledger entry).
 */
export class Graduator {
  readonly id = newId('grad', 6);
  private readonly loop: PollLoop;
  private readonly unsubscribe: () => void;
  /** Migrations this job sent (tests read it). */
  sent = 0;

  constructor(private readonly options: GraduatorOptions) {
    this.loop = createPollLoop({
      logger: options.logger,
      what: 'claiming graduations',
      intervalMs: options.pollIntervalMs ?? 1000,
      turn: async () => (await this.runOnce()) > 0,
    });
    this.unsubscribe = graduationDue.on(() => this.loop.wake());
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    this.unsubscribe();
    await this.loop.stop();
  }

  /** Claims and runs every due graduation once; resolves with how many were claimed. */
  async runOnce(): Promise<number> {
    const { db, clock, leaseMs } = this.options;
    const claimed = await claimDueMigrations(db, { owner: this.id, now: clock.now(), leaseMs, limit: 4 });
    for (const row of claimed) await this.runSafely(row);
    return claimed.length;
  }

  private async runSafely(row: MigrationRow): Promise<void> {
    const { db, clock } = this.options;
    const logger = this.options.logger.child({ launchId: row.launch_id, pool: row.pool });
    try {
      await this.run(row, logger);
      this.options.signal.notify();
    } catch (error) {
      if (error instanceof MigrationFencedError) {
        logger.warn('graduation lease lost to another instance; leaving it');
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      logger.warn({ err: error }, 'graduation failed; retrying later');
      await retryMigrationLater(db, row, { at: clock.now() + backoffMs(Number(row.attempts), 2000, 60_000), error: message, now: clock.now() }).catch(() => undefined);
    }
  }

  private async run(row: MigrationRow, logger: Logger): Promise<void> {
    const { db, chain, clock } = this.options;
    const kit = await curveKit();
    const pool = new PublicKey(row.pool);
    const readState = async (): Promise<CurveState | undefined> => {
      const info = await chain.getAccountInfo(pool);
      return info ? kit.decodeCurveState(info.data) : undefined;
    };
    const state = await readState();
    if (!state) throw new Error(`curve ${row.pool} does not exist on the chain`);
    const launch = await db.selectFrom('launches').select(['id', 'owner', 'payer', 'request']).where('id', '=', row.launch_id).executeTakeFirst();
    if (!launch) throw new Error(`launch ${row.launch_id} is gone`);
    const { keypair: payer, owned } = await this.payerOf(launch);
    const configInfo = await chain.getAccountInfo(state.config);
    if (!configInfo) throw new Error(`curve config ${state.config.toBase58()} does not exist on the chain`);
    const migration = await kit.buildMigrationInstructions({ pool, state, configData: configInfo.data, payer: payer.publicKey, firstNftMint: this.nftKey(row, 1).publicKey, secondNftMint: this.nftKey(row, 2).publicKey });
    const pending: Record<string, PendingTx> = pendingOf(row);

    if (!state.isMigrated && state.migrationProgress < 1) {
      // Not full after all: the watcher marks it due again when it fills.
      logger.info({ migrationProgress: state.migrationProgress, quoteReserve: state.quoteReserve.toString() }, 'curve not ready to migrate; checking again later');
      await retryMigrationLater(db, row, { at: clock.now() + 5_000, error: 'the curve is not full yet', now: clock.now() });
      return;
    }
    if (state.isMigrated && !pending[LABEL]) return this.complete(row, migration, state, { signature: await this.firstSignatureOf(migration.ammPool), paidBy: null, spent: undefined, vesting: await this.vestingOf(pool, state, configInfo.data, payer) });

    const ctx = {
      chain,
      payer,
      pending,
      recordPending: async (label: string, tx: PendingTx) => {
        await recordMigrationPending(db, row, { ...pending, [label]: tx }, clock.now());
        await this.options.beforeSend?.(row);
      },
      logger,
      budget: undefined,
    } as unknown as StepContext;
    const paidBy = payer.publicKey.toBase58();
    const spends: Array<{ signature: string; lamports: bigint }> = [];
    const paid = async (signature: string) => {
      const tx = await chain.history.getTransaction(signature);
      if (!tx) throw new TransientError('chain_unavailable', `graduation transaction ${signature} landed but cannot be read yet`);
      if (tx.accountKeys[0] === paidBy) spends.push({ signature, lamports: (tx.preBalances[0] ?? 0n) - (tx.postBalances[0] ?? 0n) });
    };

    // Locked vesting first (migrationProgress 1): DBC's create_locker makes the Jupiter Lock escrow for
    // the curve's DBC creator (this wallet), which hands it to the beneficiary (docs/programs.md).
    if (!state.isMigrated && (state.migrationProgress === 1 || pending.create_locker)) {
      const locker = await kit.buildLockerInstructions({ pool, state, configData: configInfo.data, payer: payer.publicKey });
      const sent = await sendIdempotent(ctx, { label: 'create_locker', type: 'locker', instructions: () => locker.instructions, signers: [], rentLamports: 0, postcondition: async () => ((await readState())?.migrationProgress ?? 0) >= 2 });
      if (sent.via !== 'postcondition') await paid(sent.signature);
    }
    const beneficiary = beneficiaryOf(launch.request);
    const escrowAddress = (await kit.buildLockerInstructions({ pool, state, configData: configInfo.data, payer: payer.publicKey })).escrow;
    const escrowInfo = beneficiary ? await chain.getAccountInfo(escrowAddress) : null;
    if (beneficiary && escrowInfo && !decodeVestingEscrow(escrowInfo.data).recipient.equals(beneficiary)) {
      const recipientNow = async () => {
        const info = await chain.getAccountInfo(escrowAddress);
        return info !== null && decodeVestingEscrow(info.data).recipient.equals(beneficiary);
      };
      const sent = await sendIdempotent(ctx, { label: 'locker_recipient', type: 'locker_recipient', instructions: () => [updateVestingEscrowRecipientInstruction({ escrow: escrowAddress, signer: payer.publicKey, newRecipient: beneficiary })], signers: [], rentLamports: 0, postcondition: recipientNow });
      if (sent.via !== 'postcondition') await paid(sent.signature);
    }

    const sent = await sendIdempotent(ctx, {
      label: LABEL,
      type: 'migration',
      instructions: () => migration.instructions,
      signers: [this.nftKey(row, 1), this.nftKey(row, 2)],
      rentLamports: 0,
      postcondition: async () => (await readState())?.isMigrated === true,
    });
    if (sent.via === 'sent' || sent.via === 'resent') this.sent += 1;
    const vesting = await this.vestingOf(pool, state, configInfo.data, payer);
    const status = await chain.getSignatureStatus(sent.signature);
    if (!status || status.err) {
      // Ours failed and the curve is migrated all the same: someone else's migration landed first.
      return this.complete(row, migration, state, { signature: await this.firstSignatureOf(migration.ammPool), paidBy: null, spent: spends, vesting, owned });
    }
    await paid(sent.signature);
    logger.info({ signature: sent.signature, via: sent.via, lamports: spends.at(-1)?.lamports }, 'curve graduated to DAMM v2');
    return this.complete(row, migration, state, { signature: sent.signature, paidBy, spent: spends, vesting, owned });
  }

  /** The curve's locked vesting escrow after graduation, if it has one. */
  private async vestingOf(pool: PublicKey, state: CurveState, configData: Buffer, payer: Keypair): Promise<{ escrow: string; recipient: string; amount: string; cliffTime: number; cliffUnlocked: string } | null> {
    const kit = await curveKit();
    const { escrow } = await kit.buildLockerInstructions({ pool, state, configData, payer: payer.publicKey });
    const info = await this.options.chain.getAccountInfo(escrow);
    if (!info) return null;
    const decoded = decodeVestingEscrow(info.data);
    return { escrow: escrow.toBase58(), recipient: decoded.recipient.toBase58(), amount: escrowTotal(decoded).toString(), cliffTime: Number(decoded.cliffTime), cliffUnlocked: decoded.cliffUnlockAmount.toString() };
  }

  /**
   * One commit under the fence: the row done, `pool.graduated`, the ledger's spend entries (an
   * owner-funded launch's own transactions) and the release of the launch's reservation, and the watch of a locked-vesting escrow.
   */
  private async complete(row: MigrationRow, migration: CurveMigration, state: CurveState, done: { signature: string; paidBy: string | null; spent: Array<{ signature: string; lamports: bigint }> | undefined; owned?: boolean; vesting: Awaited<ReturnType<Graduator['vestingOf']>> }): Promise<void> {
    const { db, clock } = this.options;
    const data = poolGraduated({
      pool: row.pool,
      ammPool: migration.ammPool.toBase58(),
      positions: done.paidBy === null ? [] : migration.positions.map((p) => ({ address: p.address.toBase58(), nftMint: p.nftMint.toBase58(), nftAccount: p.nftAccount.toBase58(), owner: state.creator.toBase58() })),
      signature: done.signature,
      dammConfig: migration.dammConfig.toBase58(),
      paidBy: done.paidBy,
      vesting: done.vesting ? { escrow: done.vesting.escrow, recipient: done.vesting.recipient, amount: done.vesting.amount } : null,
    });
    await db.transaction().execute(async (trx) => {
      const now = clock.now();
      await completeMigration(trx, row, { signature: done.signature, ammPool: data.ammPool, result: data, now });
      await recordEvent(trx, clock, { launchId: row.launch_id, event: 'pool.graduated', data });
      for (const s of done.owned ? (done.spent ?? []) : []) {
        if (s.lamports > 0) await insertEntry(trx, { owner: row.owner, launchId: row.launch_id, kind: 'spend', lamports: s.lamports, signature: s.signature, details: { graduation: data.ammPool }, now });
      }
      // The launch's reservation held the graduation's cost until now (docs/funding.md): released once it is paid.
      await closeReservation(trx, { launchId: row.launch_id, now });
      const v = done.vesting;
      if (v) {
        // The escrow is watched like a launch's own (vesting.cliff_reached, vesting.claimed, vesting.complete).
        await insertWatches(trx, {
          launchId: row.launch_id,
          watches: [{ kind: 'vesting', address: v.escrow, context: { programId: JUPITER_LOCK_PROGRAM_ID.toBase58(), recipient: v.recipient, total: v.amount, totalClaimed: '0', cliffUnlocked: v.cliffUnlocked }, cliffAt: v.cliffTime > 0 ? v.cliffTime * 1000 : undefined }],
          now,
          ttlMs: VESTING_WATCH_TTL_MS,
        });
      }
    });
  }

  /**
   * Who pays the migration: the launch's funding wallet; for a creator-signed curve (no payer: the
   * creator paid the launch) the owner's funding wallet all the same, never the creator, whose key
   * the service does not hold (docs/signing.md); the service's payer only for launches made before funding.
   */
  private async payerOf(launch: { id: string; owner: string; payer: string | null; request: string }): Promise<{ keypair: Keypair; owned: boolean }> {
    const funding = this.options.funding;
    if (launch.payer === null && funding && creatorSigned(launch.request)) return { keypair: keypairFromSeed(Buffer.from((await funding.ownerPayer(launch.owner)).payerSeed)), owned: true };
    const paidBy = launch.payer === null ? undefined : await funding?.payerFor(launch);
    return paidBy ? { keypair: keypairFromSeed(Buffer.from(paidBy.payerSeed)), owned: true } : { keypair: this.options.chain.payer, owned: false };
  }

  /** The position NFT mint keys of a launch's graduation: derived, so a re-signed transaction creates the same accounts. */
  private nftKey(row: MigrationRow, n: 1 | 2): Keypair {
    return keypairFromSeed(deriveSeed(this.options.keySecret, row.launch_id, `graduation-position-nft-${n}`));
  }

  /** The transaction that created the DAMM v2 pool (its address's oldest signature): a migration someone else ran. */
  private async firstSignatureOf(ammPool: PublicKey): Promise<string> {
    if (!(await this.options.chain.getAccountInfo(ammPool))?.owner.equals(DAMM_V2_PROGRAM_ID)) throw new Error(`the curve is migrated but its DAMM v2 pool ${ammPool.toBase58()} is not there`);
    let before: string | undefined;
    let oldest: string | undefined;
    for (;;) {
      const page = await this.options.chain.history.signaturesForAddress(ammPool.toBase58(), { before, limit: 1000 });
      if (page.length === 0) break;
      oldest = page.at(-1)!.signature;
      if (page.length < 1000) break;
      before = oldest;
    }
    if (!oldest) throw new TransientError('chain_unavailable', `no history for ${ammPool.toBase58()} yet`);
    return oldest;
  }
}
