/**
 * What a token holder does after a launch, with plain web3.js against the local cluster (or any
 * cluster the launch ran on): the beneficiary claims what its vesting escrow has unlocked, the
 * creator deposits governing tokens, creates a proposal and votes on it. The service reports each
 * action to the launch's webhook (`vesting.claimed`, `dao.proposal_created`, `dao.vote_cast`, …).
 *
 *   npm run holder -- keygen  <keypair.json>                   (a new keypair file; prints its address)
 *   npm run holder -- fund    <keypair.json | address> [SOL]    (an airdrop from the local cluster)
 *   npm run holder -- claim   <launchId> <beneficiary keypair.json> [--wait]   (--wait: until something is unlocked)
 *   npm run holder -- propose <launchId> <creator keypair.json> "<proposal name>" [approve|deny]
 *   npm run holder -- sign    <launchId> <creator keypair.json>   (a creator-signed launch: sign and submit, docs/signing.md)
 *   npm run holder -- claim-fees <launchId> <creator keypair.json>   (a creator-signed curve: its creator and partner fees to the creator)
 *   npm run holder -- buy     <launchId> <trader keypair.json> <SOL>   (buys on a bonding-curve launch's curve with Meteora's SDK)
 *
 * Environment: SERVICE_URL, API_KEY (launches:read; launches:write for sign), RPC_URL, RPC_WS_URL. Unset, the URLs are those a
 * running development service wrote to DATA_DIR/local.json (its local cluster may have moved off a
 * taken 8899), else http://127.0.0.1:8080 and http://127.0.0.1:8899 (PubSub at its port + 1, as
 * web3.js does). Keypair files are JSON arrays of 64 bytes, as solana-keygen writes.
 * The functions are exported for the post-launch test, which runs them against the running service.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import BN from 'bn.js';
import { Connection, Keypair, LAMPORTS_PER_SOL, Message, PublicKey, Transaction, TransactionInstruction, sendAndConfirmTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { createAssociatedTokenAccountIdempotentInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { DynamicBondingCurveClient, SwapMode } from '@meteora-ag/dynamic-bonding-curve-sdk';
import { curveKit } from '../src/chain/programs/dbc/curve.js';
import { readLocalEndpoints } from '../src/chain/embedded/localCluster.js';
import { decodeVestingEscrow } from '../src/chain/programs/jupiterLock/escrowAccount.js';
import { claimableAt } from '../src/chain/programs/jupiterLock/schedule.js';
import { Vote, VoteType, YesNoVote, getTokenOwnerRecordAddress, withCastVote, withCreateProposal, withDepositGoverningTokens, withSignOffProposal } from '@solana/spl-governance';

export const JUPITER_LOCK = new PublicKey('LocpQgucEQHbqNABEYvBvwoxCPsSbG91A1QaQhQQqjn');
export const SPL_GOVERNANCE = new PublicKey('GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw');
const MEMO = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const anchorDiscriminator = (name: string) => createHash('sha256').update(`global:${name}`).digest().subarray(0, 8);

/** Claims everything the escrow has unlocked (Jupiter Lock `claim_v2`; SPL Token and Token-2022). */
export async function claimVesting(connection: Connection, beneficiary: Keypair, escrow: PublicKey, mint: PublicKey): Promise<string> {
  const tokenProgram = (await connection.getAccountInfo(mint))?.owner;
  if (!tokenProgram) throw new Error(`mint ${mint.toBase58()} not found`);
  const recipientToken = getAssociatedTokenAddressSync(mint, beneficiary.publicKey, false, tokenProgram);
  const claim = new TransactionInstruction({
    programId: JUPITER_LOCK,
    keys: [
      { pubkey: escrow, isSigner: false, isWritable: true },
      { pubkey: mint, isSigner: false, isWritable: false },
      { pubkey: getAssociatedTokenAddressSync(mint, escrow, true, tokenProgram), isSigner: false, isWritable: true },
      { pubkey: beneficiary.publicKey, isSigner: true, isWritable: true },
      { pubkey: recipientToken, isSigner: false, isWritable: true },
      { pubkey: MEMO, isSigner: false, isWritable: false },
      { pubkey: tokenProgram, isSigner: false, isWritable: false },
      { pubkey: PublicKey.findProgramAddressSync([Buffer.from('__event_authority')], JUPITER_LOCK)[0], isSigner: false, isWritable: false },
      { pubkey: JUPITER_LOCK, isSigner: false, isWritable: false },
    ],
    // max_amount = u64::MAX (all that is unlocked), remaining_accounts_info = None
    data: Buffer.concat([anchorDiscriminator('claim_v2'), Buffer.from(new BN('18446744073709551615').toArray('le', 8)), Buffer.from([0])]),
  });
  const open = createAssociatedTokenAccountIdempotentInstruction(beneficiary.publicKey, recipientToken, beneficiary.publicKey, mint, tokenProgram);
  return sendAndConfirmTransaction(connection, new Transaction().add(open, claim), [beneficiary]);
}

/** Deposits `amount` governing tokens into the realm (once; later calls deposit nothing more). */
export async function depositGoverningTokens(connection: Connection, creator: Keypair, realm: PublicKey, mint: PublicKey, amount: bigint): Promise<string> {
  const tokenProgram = (await connection.getAccountInfo(mint))?.owner;
  if (!tokenProgram) throw new Error(`mint ${mint.toBase58()} not found`);
  const ixs: TransactionInstruction[] = [];
  const source = getAssociatedTokenAddressSync(mint, creator.publicKey, false, tokenProgram);
  await withDepositGoverningTokens(ixs, SPL_GOVERNANCE, 3, realm, source, mint, creator.publicKey, creator.publicKey, creator.publicKey, new BN(amount.toString()));
  return sendAndConfirmTransaction(connection, new Transaction().add(...ixs), [creator]);
}

/** Creates and signs off a yes/no proposal under `governance`; resolves with its address. */
export async function createProposal(connection: Connection, creator: Keypair, dao: { realm: PublicKey; governance: PublicKey; mint: PublicKey }, name: string): Promise<{ proposal: PublicKey; signature: string }> {
  const record = await getTokenOwnerRecordAddress(SPL_GOVERNANCE, dao.realm, dao.mint, creator.publicKey);
  const ixs: TransactionInstruction[] = [];
  const proposal = await withCreateProposal(ixs, SPL_GOVERNANCE, 3, dao.realm, dao.governance, record, name, 'https://example.com/proposal', dao.mint, creator.publicKey, undefined /* v3: a random seed, no index */, VoteType.SINGLE_CHOICE, ['Approve'], true, creator.publicKey);
  withSignOffProposal(ixs, SPL_GOVERNANCE, 3, dao.realm, dao.governance, proposal, creator.publicKey, undefined, record);
  return { proposal, signature: await sendAndConfirmTransaction(connection, new Transaction().add(...ixs), [creator]) };
}

/** Votes approve (yes) or deny (no) with the creator's deposited weight. */
export async function castVote(connection: Connection, creator: Keypair, dao: { realm: PublicKey; governance: PublicKey; mint: PublicKey }, proposal: PublicKey, approve: boolean): Promise<string> {
  const record = await getTokenOwnerRecordAddress(SPL_GOVERNANCE, dao.realm, dao.mint, creator.publicKey);
  const ixs: TransactionInstruction[] = [];
  const vote = Vote.fromYesNoVote(approve ? YesNoVote.Yes : YesNoVote.No);
  await withCastVote(ixs, SPL_GOVERNANCE, 3, dao.realm, dao.governance, proposal, record, record, creator.publicKey, dao.mint, vote, creator.publicKey);
  return sendAndConfirmTransaction(connection, new Transaction().add(...ixs), [creator]);
}

/** What a buy on the curve got: the tokens received, the SOL paid (fees included) and the curve's fill after it. */
export interface CurveBuy {
  signature: string;
  tokens: bigint;
  paidLamports: bigint;
  quoteReserveLamports: bigint;
  migrated: boolean;
}

/**
 * Buys on a Dynamic Bonding Curve with Meteora's own SDK, as any outside trader would: `swap2` in
 * partial-fill mode (the buy that reaches the end of the curve takes only what is left), SOL in, the
 * launched token out to the trader's token account. No minimum out: this is a tool for the local
 * cluster, not a trading bot.
 */
export async function buyOnCurve(connection: Connection, trader: Keypair, pool: PublicKey, lamports: bigint): Promise<CurveBuy> {
  const client = new DynamicBondingCurveClient(connection, 'confirmed');
  const kit = await curveKit();
  const read = async () => {
    const info = await connection.getAccountInfo(pool);
    if (!info) throw new Error(`${pool.toBase58()} is not a Dynamic Bonding Curve pool`);
    return kit.decodeCurveState(info.data);
  };
  const mint = (await read()).baseMint;
  const tokenProgram = (await connection.getAccountInfo(mint))?.owner;
  if (!tokenProgram) throw new Error(`mint ${mint.toBase58()} not found`);
  const account = getAssociatedTokenAddressSync(mint, trader.publicKey, false, tokenProgram);
  const held = async () => BigInt((await connection.getTokenAccountBalance(account).catch(() => ({ value: { amount: '0' } }))).value.amount);
  const [tokensBefore, solBefore] = [await held(), BigInt(await connection.getBalance(trader.publicKey))];
  const tx = await client.pool.swap2({ owner: trader.publicKey, pool, swapMode: SwapMode.PartialFill, amountIn: new BN(lamports.toString()), minimumAmountOut: new BN(0), swapBaseForQuote: false, referralTokenAccount: null });
  const signature = await sendAndConfirmTransaction(connection, tx, [trader]);
  const after = await read();
  return {
    signature,
    tokens: (await held()) - tokensBefore,
    paidLamports: solBefore - BigInt(await connection.getBalance(trader.publicKey)),
    quoteReserveLamports: after.quoteReserve,
    migrated: after.isMigrated,
  };
}

/** What a fee claim on the curve paid the creator: the signatures and the SOL its wallet gained (net of the fees it paid). */
export interface CurveFeeClaim {
  signatures: string[];
  claimedLamports: bigint;
  netLamports: bigint;
}

/**
 * Claims a curve's trading fees that are its DBC creator's and its partner's (the fee claimer), with
 * Meteora's own SDK, signed by that wallet: on a creator-signed launch both are the creator, and
 * only its signature can claim them (docs/signing.md). Our curves collect fees in SOL only.
 */
export async function claimCurveFees(connection: Connection, creator: Keypair, pool: PublicKey): Promise<CurveFeeClaim> {
  const client = new DynamicBondingCurveClient(connection, 'confirmed');
  const kit = await curveKit();
  const info = await connection.getAccountInfo(pool);
  if (!info) throw new Error(`${pool.toBase58()} is not a Dynamic Bonding Curve pool`);
  const state = kit.decodeCurveState(info.data);
  const before = BigInt(await connection.getBalance(creator.publicKey));
  const signatures: string[] = [];
  let claimed = 0n;
  if (state.creator.equals(creator.publicKey) && state.creatorQuoteFee > 0n) {
    const tx = await client.creator.claimCreatorTradingFee({ creator: creator.publicKey, payer: creator.publicKey, pool, maxBaseAmount: new BN(0), maxQuoteAmount: new BN(state.creatorQuoteFee.toString()) });
    signatures.push(await sendAndConfirmTransaction(connection, tx, [creator]));
    claimed += state.creatorQuoteFee;
  }
  const config = await client.state.getPoolConfig(state.config);
  if (config?.feeClaimer.equals(creator.publicKey) && state.partnerQuoteFee > 0n) {
    const tx = await client.partner.claimPartnerTradingFee({ feeClaimer: creator.publicKey, payer: creator.publicKey, pool, maxBaseAmount: new BN(0), maxQuoteAmount: new BN(state.partnerQuoteFee.toString()) });
    signatures.push(await sendAndConfirmTransaction(connection, tx, [creator]));
    claimed += state.partnerQuoteFee;
  }
  return { signatures, claimedLamports: claimed, netLamports: BigInt(await connection.getBalance(creator.publicKey)) - before };
}

const USAGE = `usage: npm run holder -- keygen  <keypair.json>
       npm run holder -- fund    <keypair.json | address> [SOL, default 2]
       npm run holder -- claim   <launchId> <beneficiary keypair.json> [--wait]
       npm run holder -- propose <launchId> <creator keypair.json> "<name>" [approve|deny]
       npm run holder -- sign    <launchId> <creator keypair.json>
       npm run holder -- buy     <launchId> <trader keypair.json> <SOL>
       npm run holder -- claim-fees <launchId> <creator keypair.json>`;

interface SigningRequest {
  status: string;
  transactions: Array<{ index: number; step: string; message: string; signers: string[]; signed: boolean }>;
}

/**
 * Signs a creator-signed launch's transactions with the creator's keypair and submits them, round
 * after round (the setup, then the launch's transactions once the setup landed): each message is
 * checked to name the creator as a signer before it is signed. Resolves with the final request.
 */
export async function signLaunch(service: string, apiKey: string, launchId: string, creator: Keypair, log: (line: string) => void = () => undefined): Promise<SigningRequest> {
  const call = async (method: string, path: string, body?: unknown): Promise<SigningRequest> => {
    const res = await fetch(`${service}/api/launches/${launchId}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} /api/launches/${launchId}${path}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { signing: SigningRequest }).signing;
  };
  let request = await call('GET', '/signing');
  for (let round = 0; round < 5 && request.status === 'awaiting_signatures'; round += 1) {
    const unsigned = request.transactions.filter((tx) => !tx.signed);
    if (unsigned.length === 0) break;
    const signatures = unsigned.map((tx) => {
      if (!tx.signers.includes(creator.publicKey.toBase58())) throw new Error(`transaction ${tx.index} (${tx.step}) is not for ${creator.publicKey.toBase58()} to sign`);
      // A wallet's detached Ed25519 signature over the message bytes, as signTransaction makes it.
      const message = Buffer.from(tx.message, 'base64');
      const transaction = Transaction.populate(Message.from(message));
      transaction.partialSign(creator);
      const signature = transaction.signatures.find((s) => s.publicKey.equals(creator.publicKey))?.signature;
      if (!signature) throw new Error(`transaction ${tx.index} could not be signed`);
      log(`signed ${tx.index} ${tx.step}`);
      return { index: tx.index, signature: bs58.encode(signature) };
    });
    try {
      request = await call('POST', '/signatures', { signatures });
    } catch (error) {
      // A setup past its blockhash (signed too slowly): the service offers a fresh one within seconds.
      if (!(error instanceof Error) || !error.message.includes('"setup_expired"')) throw error;
      log('the setup expired before it was sent; signing the fresh one');
      await new Promise((done) => setTimeout(done, 2_500));
      request = await call('GET', '/signing');
    }
  }
  return request;
}

/** The service and local cluster to talk to: the environment first, then what a running service wrote to DATA_DIR. */
function endpoints(): { service: string; rpcUrl: string; wsUrl: string | undefined } {
  const local = readLocalEndpoints(resolve(process.env.DATA_DIR || './data'));
  const rpcUrl = process.env.RPC_URL || local?.rpcUrl || 'http://127.0.0.1:8899';
  return {
    service: process.env.SERVICE_URL || local?.serviceUrl || 'http://127.0.0.1:8080',
    rpcUrl,
    // web3.js confirms over PubSub at the RPC port + 1 unless told otherwise (the local cluster serves both).
    wsUrl: process.env.RPC_WS_URL || (process.env.RPC_URL ? undefined : local?.wsUrl),
  };
}

function readKeypair(file: string): Keypair {
  return Keypair.fromSecretKey(Uint8Array.from(JSON.parse(readFileSync(file, 'utf8')) as number[]));
}

async function main(argv: string[]): Promise<void> {
  const [command, first, second, name, choice] = argv;
  const { service, rpcUrl, wsUrl } = endpoints();
  const connection = new Connection(rpcUrl, { commitment: 'confirmed', wsEndpoint: wsUrl });
  if (command === 'keygen' && first) {
    if (existsSync(first)) throw new Error(`${first} exists; choose another file (an existing keypair is never overwritten)`);
    const keypair = Keypair.generate();
    // The format solana-keygen writes: the 64-byte secret key as a JSON array, readable only by its owner.
    writeFileSync(first, JSON.stringify(Array.from(keypair.secretKey)), { mode: 0o600, flag: 'wx' });
    process.stdout.write(`${keypair.publicKey.toBase58()}\n`);
    return;
  }
  if (command === 'fund' && first) {
    const address = existsSync(first) ? readKeypair(first).publicKey : new PublicKey(first);
    const sol = Number(second ?? '2');
    if (!Number.isFinite(sol) || sol <= 0 || sol > 1000) throw new Error(`SOL must be a number above 0 and at most 1000, got "${second}"`);
    // requestAirdrop: the local cluster transfers from the embedded chain's faucet (no Solana CLI needed).
    const signature = await connection.requestAirdrop(address, Math.round(sol * LAMPORTS_PER_SOL));
    await connection.confirmTransaction({ signature, ...(await connection.getLatestBlockhash()) }, 'confirmed');
    process.stdout.write(`funded ${address.toBase58()} with ${sol} SOL: ${signature}\n`);
    return;
  }
  const launchId = first;
  const keypairFile = second;
  if (command === 'sign' && launchId && keypairFile) {
    const request = await signLaunch(service, process.env.API_KEY ?? '', launchId, readKeypair(keypairFile), (line) => process.stdout.write(`${line}\n`));
    process.stdout.write(`${request.status}\n`);
    if (request.status !== 'signed') process.exit(1);
    return;
  }
  if ((command !== 'claim' && command !== 'propose' && command !== 'buy' && command !== 'claim-fees') || !launchId || !keypairFile) {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
  const res = await fetch(`${service}/api/launches/${launchId}`, { headers: { authorization: `Bearer ${process.env.API_KEY ?? ''}` } });
  if (!res.ok) throw new Error(`GET /api/launches/${launchId}: ${res.status} ${await res.text()}`);
  const { launch } = (await res.json()) as { launch: { results: { mint: string; vesting?: { escrow: string }; dao?: { realm: string; governance: string }; pool?: { kind?: string; address?: string; graduationQuoteLamports?: string } } | null } };
  if (!launch.results) throw new Error('the launch is not complete yet');
  const signer = readKeypair(keypairFile);
  const mint = new PublicKey(launch.results.mint);
  if (command === 'buy') {
    const pool = launch.results.pool;
    if (pool?.kind !== 'bonding-curve' || !pool.address) throw new Error('the launch has no bonding curve');
    const sol = name ?? '';
    if (!/^\d+(\.\d{1,9})?$/.test(sol) || Number(sol) <= 0) throw new Error(`SOL must be a positive amount with at most 9 decimals, got "${sol}"`);
    const [whole, fraction = ''] = sol.split('.');
    const lamports = BigInt(whole!) * BigInt(LAMPORTS_PER_SOL) + BigInt(fraction.padEnd(9, '0'));
    const got = await buyOnCurve(connection, signer, new PublicKey(pool.address), lamports);
    const threshold = BigInt(pool.graduationQuoteLamports ?? '0');
    const percent = threshold > 0n ? Number((got.quoteReserveLamports * 10_000n) / threshold) / 100 : 0;
    process.stdout.write(`bought ${got.tokens} base units of ${mint.toBase58()} for ${got.paidLamports} lamports (fees included): ${got.signature}\n`);
    process.stdout.write(`curve ${pool.address}: ${got.quoteReserveLamports} of ${threshold} lamports (${percent} %)${got.migrated || got.quoteReserveLamports >= threshold ? ', full: the service graduates it' : ''}\n`);
    return;
  }
  if (command === 'claim-fees') {
    // A creator-signed curve's fees: only the creator's signature claims them (docs/signing.md).
    const pool = launch.results.pool;
    if (pool?.kind !== 'bonding-curve' || !pool.address) throw new Error('the launch has no bonding curve');
    const got = await claimCurveFees(connection, signer, new PublicKey(pool.address));
    if (got.signatures.length === 0) {
      process.stdout.write(`nothing to claim for ${signer.publicKey.toBase58()} on curve ${pool.address}\n`);
      return;
    }
    process.stdout.write(`claimed ${got.claimedLamports} lamports of fees to ${signer.publicKey.toBase58()} (${got.netLamports} net of the transaction fees): ${got.signatures.join(' ')}\n`);
    return;
  }
  if (command === 'claim') {
    if (!launch.results.vesting) throw new Error('the launch has no vesting');
    const escrowAddress = new PublicKey(launch.results.vesting.escrow);
    const readEscrow = async () => {
      const info = await connection.getAccountInfo(escrowAddress);
      if (!info) throw new Error(`the escrow ${escrowAddress.toBase58()} is closed: nothing left to claim`);
      return decodeVestingEscrow(info.data);
    };
    // A claim before anything is unlocked would move 0 tokens (and report vesting.claimed with amount 0):
    // say when instead, or with --wait, wait until then.
    for (;;) {
      const { claimable, next } = claimableAt(await readEscrow(), BigInt(Math.floor(Date.now() / 1000)));
      if (claimable > 0n) break;
      const when = next ? `${next.amount} base units unlock at ${new Date(Number(next.at) * 1000).toISOString()}` : undefined;
      if (!when || name !== '--wait') {
        process.stderr.write(when ? `nothing to claim yet: ${when}\n` : 'nothing left to claim: everything vested was claimed\n');
        process.exit(1);
      }
      process.stdout.write(`waiting: ${when}\n`);
      // A second past it, so the chain's clock has passed it too.
      await new Promise((done) => setTimeout(done, Math.max(0, Number(next!.at) * 1000 - Date.now()) + 1_000));
    }
    const before = (await readEscrow()).totalClaimedAmount;
    const signature = await claimVesting(connection, signer, escrowAddress, mint);
    process.stdout.write(`claimed ${(await readEscrow()).totalClaimedAmount - before} base units: ${signature}\n`);
    return;
  }
  if (!launch.results.dao) throw new Error('the launch has no DAO');
  const dao = { realm: new PublicKey(launch.results.dao.realm), governance: new PublicKey(launch.results.dao.governance), mint };
  const record = await getTokenOwnerRecordAddress(SPL_GOVERNANCE, dao.realm, mint, signer.publicKey);
  if (!(await connection.getAccountInfo(record))) {
    const tokenProgram = (await connection.getAccountInfo(mint))?.owner as PublicKey;
    const balance = await connection.getTokenAccountBalance(getAssociatedTokenAddressSync(mint, signer.publicKey, false, tokenProgram));
    process.stdout.write(`deposited: ${await depositGoverningTokens(connection, signer, dao.realm, mint, BigInt(balance.value.amount))}\n`);
  }
  const created = await createProposal(connection, signer, dao, name ?? 'A proposal');
  process.stdout.write(`proposal ${created.proposal.toBase58()}: ${created.signature}\n`);
  process.stdout.write(`voted: ${await castVote(connection, signer, dao, created.proposal, choice !== 'deny')}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  });
}
