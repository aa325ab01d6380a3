import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import BN from 'bn.js';
import { Keypair, LAMPORTS_PER_SOL, PublicKey, Transaction, TransactionInstruction, type Signer } from '@solana/web3.js';
import { TOKEN_PROGRAM_ID, createAssociatedTokenAccountIdempotentInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { Vote, VoteKind, VoteType, YesNoVote, withCastVote, withCreateProposal, withDepositGoverningTokens, withFinalizeVote, withSignOffProposal } from '@solana/spl-governance';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { cpmmGenesisHook } from '../../src/chain/programs/cpmm/genesis.js';
import { instructionDiscriminator } from '../../src/chain/programs/anchor.js';
import { eventAuthorityAddress } from '../../src/chain/programs/jupiterLock/pdas.js';
import { CPMM_MAINNET_PROGRAM_ID, JUPITER_LOCK_PROGRAM_ID, SPL_GOVERNANCE_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { createDao } from '../../src/chain/steps/createDao.js';
import { createVesting } from '../../src/chain/steps/createVesting.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { noopSignal } from '../../src/webhooks/outbox.js';
import { WATCH_HANDLERS, watchesForLaunch } from '../../src/watcher/handlers.js';
import { insertWatches, type WatchRow } from '../../src/watcher/store.js';
import { ChainWatcher } from '../../src/watcher/watcher.js';
import { StepHarness, samplePlan } from '../chain/support/fixtures.js';
import { haveBinaries, needs, programsDir } from '../programs/support/binaries.js';
import { createTestDb, insertLaunch, newSecretBox, type TestDb } from '../support/webhooks.js';

const METADATA = 'metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s';
const NEEDED = [METADATA, JUPITER_LOCK_PROGRAM_ID.toBase58(), SPL_GOVERNANCE_PROGRAM_ID.toBase58(), CPMM_MAINNET_PROGRAM_ID.toBase58()];
const GOV = SPL_GOVERNANCE_PROGRAM_ID;
/** RECORD_WATCHER_FIXTURES=1 writes the transactions and accounts this scenario produces as decoder test data. */
const RECORD = process.env.RECORD_WATCHER_FIXTURES === '1';
const FIXTURES = join(import.meta.dirname, 'fixtures', 'recorded');

// The post-launch scenario on the embedded chain with the real programs: a launch with
// vesting and a DAO, then the beneficiary claims and the creator proposes and votes, while the
// watcher reports each action through the outbox.
describe.skipIf(!haveBinaries(...NEEDED))(`after the launch: the watcher reports claims, proposals and votes${needs(...NEEDED)}`, () => {
  let t: TestDb;
  let chain: EmbeddedBackend;
  let launchId: string;
  let watcher: ChainWatcher;
  const clock = manualClock(Date.UTC(2026, 10, 22, 12));
  const creator = Keypair.generate();
  const beneficiary = Keypair.generate();
  let harness: StepHarness;
  const recorded: Record<string, unknown> = {};

  const send = async (ixs: TransactionInstruction[], signers: Signer[]) => {
    const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
    const tx = new Transaction({ feePayer: signers[0]?.publicKey, blockhash, lastValidBlockHeight }).add(...ixs);
    tx.sign(...signers);
    return chain.sendRawTransaction(tx.serialize());
  };
  const record = async (name: string, signature: string, accounts: string[] = []) => {
    if (!RECORD) return;
    const stored = await chain.storedTransaction(signature);
    const data: Record<string, string | null> = {};
    for (const a of accounts) data[a] = (await chain.getAccountInfo(new PublicKey(a)))?.data.toString('base64') ?? null;
    recorded[name] = { signature, slot: stored?.slot, blockTime: stored?.blockTime, tx: Buffer.from(stored?.bytes ?? []).toString('base64'), meta: stored?.meta, accounts: data };
  };
  const watchEvents = async () =>
    (await t.db.selectFrom('outbox_events').select(['event', 'sequence', 'body']).where('launch_id', '=', launchId).orderBy('sequence').execute()).map(
      (e) => ({ event: e.event, sequence: e.sequence, data: (JSON.parse(e.body) as { data: Record<string, string> }).data }),
    );
  const check = async () => {
    await t.db.withTables<{ watches: WatchRow }>().updateTable('watches').set({ next_check_at: 0 }).where('state', '=', 'active').execute();
    return watcher.runOnce();
  };

  beforeAll(async () => {
    t = await createTestDb();
    chain = await createEmbeddedBackend({ db: t.db, secretKey: Buffer.alloc(32, 8), clock, logger: silentLogger(), programsDir, genesisHooks: [cpmmGenesisHook(CPMM_MAINNET_PROGRAM_ID)] });
    await chain.airdrop(creator.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    await chain.airdrop(beneficiary.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    const plan = samplePlan({
      tokenStandard: 'spl-token',
      totalSupply: 1_000_000n,
      decimals: 6,
      creator: creator.publicKey.toBase58(),
      allocations: { creator: 60, vesting: 15, treasury: 25, pool: 0 },
      vesting: { beneficiary: beneficiary.publicKey.toBase58(), cliffSeconds: 3600, periodSeconds: 3600, periods: 2 },
      dao: { name: `DAO ${Math.random().toString(36).slice(2, 10)}`, votingPeriodSeconds: 3600, quorumPercent: 10 },
    });
    harness = new StepHarness(chain, plan);
    await harness.run('create_mint');
    await harness.run('distribute_supply');
    for (const [step, executor] of [['create_vesting', createVesting], ['create_dao', createDao]] as const) {
      Object.assign(harness.results, (await executor(harness.context(step))).result);
    }
    launchId = await insertLaunch(t.db, clock, { url: 'http://127.0.0.1:9/hook', secret: 'whsec_x', box: newSecretBox() });
    await insertWatches(t.db, { launchId, watches: watchesForLaunch(harness.results), now: clock.now(), ttlMs: 365 * 86_400_000 });
    watcher = new ChainWatcher({ db: t.db, clock, logger: silentLogger(), chain: chain.history, handlers: WATCH_HANDLERS, signal: noopSignal });
  }, 60_000);
  afterAll(async () => {
    if (RECORD) {
      mkdirSync(FIXTURES, { recursive: true });
      writeFileSync(join(FIXTURES, 'postLaunch.json'), `${JSON.stringify(recorded, null, 1)}\n`);
    }
    await chain?.close();
    await t?.close();
  });

  it('reports the cliff, each claim and the end of vesting, with amounts and signatures of the claims', async () => {
    const vesting = harness.results.vesting as { escrow: string; escrowTokenAccount: string; mint: string; amount: string };
    expect(await check()).toBe(0);
    const escrow = new PublicKey(vesting.escrow);
    const mint = new PublicKey(vesting.mint);
    const recipientToken = getAssociatedTokenAddressSync(mint, beneficiary.publicKey, false, TOKEN_PROGRAM_ID);
    const claim = (max: bigint) =>
      new TransactionInstruction({
        programId: JUPITER_LOCK_PROGRAM_ID,
        keys: [
          { pubkey: escrow, isSigner: false, isWritable: true },
          { pubkey: new PublicKey(vesting.escrowTokenAccount), isSigner: false, isWritable: true },
          { pubkey: beneficiary.publicKey, isSigner: true, isWritable: true },
          { pubkey: recipientToken, isSigner: false, isWritable: true },
          { pubkey: TOKEN_PROGRAM_ID, isSigner: false, isWritable: false },
          { pubkey: eventAuthorityAddress(), isSigner: false, isWritable: false },
          { pubkey: JUPITER_LOCK_PROGRAM_ID, isSigner: false, isWritable: false },
        ],
        data: Buffer.concat([instructionDiscriminator('claim'), Buffer.from(new BN(max.toString()).toArray('le', 8))]),
      });

    clock.advance(3600_000 + 1000); // past the cliff
    expect(await check()).toBe(1);
    clock.advance(3600_000); // one period after the cliff: half of it has unlocked
    const first = await send([createAssociatedTokenAccountIdempotentInstruction(beneficiary.publicKey, recipientToken, beneficiary.publicKey, mint), claim(2n ** 64n - 1n)], [beneficiary]);
    await record('claim_v1', first, [vesting.escrow]);
    expect(await check()).toBe(1);
    clock.advance(3600_000 + 1000); // past the last period
    const last = await send([claim(2n ** 64n - 1n)], [beneficiary]);
    await record('claim_v1_last', last, [vesting.escrow]);
    expect(await check()).toBe(2);

    const events = (await watchEvents()).filter((e) => e.event.startsWith('vesting.'));
    expect(events.map((e) => e.event)).toEqual(['vesting.cliff_reached', 'vesting.claimed', 'vesting.claimed', 'vesting.complete']);
    const [cliff, c1, c2, done] = events;
    expect(cliff?.data).toMatchObject({ vestingContract: vesting.escrow, beneficiary: beneficiary.publicKey.toBase58() });
    expect(c1?.data).toMatchObject({ signature: first, beneficiary: beneficiary.publicKey.toBase58() });
    expect(c2?.data).toMatchObject({ signature: last, totalClaimed: vesting.amount, remaining: '0' });
    expect(BigInt(c1?.data.amount ?? 0) + BigInt(c2?.data.amount ?? 0)).toBe(BigInt(vesting.amount));
    expect(cliff?.data.unlockedAmount).toBe('0'); // this schedule unlocks nothing at the cliff itself, one half per period
    expect(BigInt(c1?.data.amount ?? 0)).toBe(BigInt(vesting.amount) / 2n);
    expect(done?.data).toMatchObject({ totalClaimed: vesting.amount, signature: last });
    const vestingWatch = await t.db.withTables<{ watches: WatchRow }>().selectFrom('watches').selectAll().where('kind', '=', 'vesting').executeTakeFirstOrThrow();
    expect(vestingWatch).toMatchObject({ state: 'ended', ended_reason: 'vesting_complete' });
  }, 60_000);

  it('reports two proposals, two votes, the proposal an approve vote tips to passed and the denied one as failed', async () => {
    const dao = harness.results.dao as { realm: string; governance: string; communityMint: string };
    const realm = new PublicKey(dao.realm);
    const governance = new PublicKey(dao.governance);
    const mint = new PublicKey(dao.communityMint);
    const source = getAssociatedTokenAddressSync(mint, creator.publicKey, false, TOKEN_PROGRAM_ID);
    const deposit: TransactionInstruction[] = [];
    const tor = await withDepositGoverningTokens(deposit, GOV, 3, realm, source, mint, creator.publicKey, creator.publicKey, creator.publicKey, new BN(600_000_000_000));
    await send(deposit, [creator]);

    const propose = async (name: string, index: number) => {
      const ixs: TransactionInstruction[] = [];
      const proposal = await withCreateProposal(ixs, GOV, 3, realm, governance, tor, name, 'https://example.com/p', mint, creator.publicKey, index, VoteType.SINGLE_CHOICE, ['Approve'], true, creator.publicKey);
      withSignOffProposal(ixs, GOV, 3, realm, governance, proposal, creator.publicKey, undefined, tor);
      return { proposal, signature: await send(ixs, [creator]) };
    };
    const vote = async (proposal: PublicKey, kind: VoteKind) => {
      const ixs: TransactionInstruction[] = [];
      const v = kind === VoteKind.Approve ? Vote.fromYesNoVote(YesNoVote.Yes) : Vote.fromYesNoVote(YesNoVote.No);
      await withCastVote(ixs, GOV, 3, realm, governance, proposal, tor, tor, creator.publicKey, mint, v, creator.publicKey);
      return send(ixs, [creator]);
    };

    const first = await propose('Fund the grants programme', 0);
    await record('create_proposal', first.signature, [tor.toBase58(), first.proposal.toBase58()]);
    const yes = await vote(first.proposal, VoteKind.Approve);
    expect(await check()).toBe(3); // created, vote cast, passed (the vote tipped it)
    const second = await propose('Burn the treasury', 1);
    const no = await vote(second.proposal, VoteKind.Deny);
    let finalize: string | undefined;
    if ((await check()) < 3) {
      // Strict tipping did not settle it: let the voting time pass and finalize.
      clock.advance(3600_000 + 1000);
      const ixs: TransactionInstruction[] = [];
      await withFinalizeVote(ixs, GOV, 3, realm, governance, second.proposal, tor, mint);
      finalize = await send(ixs, [creator]);
      expect(await check()).toBe(1);
    }
    // The vote record of each vote: the account the handler reads for its weight.
    const voteRecord = async (sig: string) => ((await chain.history.getTransaction(sig))?.instructions.find((ix) => ix.programId === GOV.toBase58())?.accounts[6] ?? '');
    await record('cast_vote_approve', yes, [tor.toBase58(), first.proposal.toBase58(), await voteRecord(yes)]);
    await record('cast_vote_deny', no, [tor.toBase58(), second.proposal.toBase58(), await voteRecord(no)]);
    if (finalize) await record('finalize_vote', finalize, [second.proposal.toBase58()]);

    const events = (await watchEvents()).filter((e) => e.event.startsWith('dao.'));
    expect(events.map((e) => e.event)).toEqual(['dao.proposal_created', 'dao.vote_cast', 'dao.proposal_passed', 'dao.proposal_created', 'dao.vote_cast', 'dao.proposal_failed']);
    expect(events[0]?.data).toMatchObject({ realm: dao.realm, governance: dao.governance, proposal: first.proposal.toBase58(), name: 'Fund the grants programme', proposer: creator.publicKey.toBase58(), signature: first.signature });
    expect(events[1]?.data).toMatchObject({ proposal: first.proposal.toBase58(), voter: creator.publicKey.toBase58(), vote: 'approve', weight: '600000000000', signature: yes });
    expect(events[2]?.data).toMatchObject({ proposal: first.proposal.toBase58(), state: 'succeeded', yesVotes: '600000000000', noVotes: '0' });
    expect(events[4]?.data).toMatchObject({ proposal: second.proposal.toBase58(), vote: 'deny', signature: no });
    expect(events[5]?.data).toMatchObject({ proposal: second.proposal.toBase58(), state: 'defeated', noVotes: '600000000000' });
    // Sequences continue the launch's numbering without gaps.
    const all = await watchEvents();
    expect(all.map((e) => e.sequence)).toEqual(all.map((_, i) => i + 1));
  }, 60_000);
});
