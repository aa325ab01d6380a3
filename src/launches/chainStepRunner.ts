import { createHmac } from 'node:crypto';
import { PublicKey, type Keypair } from '@solana/web3.js';
import type { ChainBackend } from '../chain/backend.js';
import { keypairFromSeed } from '../chain/ed25519.js';
import { deriveLaunchKeys, type LaunchKeys } from '../chain/keys.js';
import { DEFAULT_PROGRAM_IDS } from '../chain/programs/programIds.js';
import { assertPayerCoversProgramSteps } from '../chain/steps/balance.js';
import type { PendingTx, StepContext, StepExecutor, StepName, StepOutcome } from '../chain/steps/types.js';
import { NonRetriableError } from '../lib/retry.js';
import { planFromRequest } from './plan.js';
import { withStepSpends, type StepRunner, type StepSpends } from './stepPort.js';

/** What the token steps need at most: mint and token-account rent plus fees, with margin. */
const TOKEN_STEPS_RESERVE_LAMPORTS = 20_000_000;

/** The master secret launch keys derive from: a purpose-bound derivation of SECRET_KEY. */
export function launchKeySecret(secretKey: Buffer): Buffer {
  return createHmac('sha256', secretKey).update('launch-keys/v1').digest();
}

/** Runs launch steps on the chain with the executors of `src/chain/steps`. */
export function createChainStepRunner(deps: { chain: ChainBackend; secretKey: Buffer; executors: Partial<Record<StepName, StepExecutor>> }): StepRunner {
  const master = launchKeySecret(deps.secretKey);
  const payers = new PayerKeys();
  const launchKeys = new LaunchKeyCache(master);
  return async (input) => {
    const executor = deps.executors[input.step];
    if (!executor) throw new NonRetriableError('invalid_configuration', `No executor for step ${input.step}`);
    const plan = planFromRequest(input.launchId, input.request);
    const payer: StepContext['payer'] = input.signing
      ? { publicKey: new PublicKey(input.signing.payer) }
      : input.payerSeed
        ? payers.of(input.payerSeed)
        : deps.chain.payer;
    if (!input.signing && input.step === 'create_mint' && Object.keys(input.pending).length === 0 && input.budgetLamports === undefined) {
      // A launch without a reservation: refuse before the first transaction when the payer cannot cover it.
      await assertPayerCoversProgramSteps(deps.chain, payer.publicKey, plan, DEFAULT_PROGRAM_IDS, TOKEN_STEPS_RESERVE_LAMPORTS);
    }
    let outcome: StepOutcome;
    try {
      outcome = await executor({
      plan,
      keys: launchKeys.of(input.launchId),
      results: input.results,
      pending: input.pending,
      recordPending: input.recordPending,
      chain: deps.chain,
      payer,
      budget: input.budgetLamports === undefined ? undefined : { remainingLamports: input.budgetLamports },
      signed: input.signing?.transactions,
      logger: input.logger,
      });
    } catch (error) {
      // A transaction of the step that landed and failed took its fee: the error carries it to the ledger.
      throw withStepSpends(error, await spentBy(deps.chain, payer, signaturesOf(input.pending, [])));
    }
    return { ...outcome, spent: await spentBy(deps.chain, payer, signaturesOf(input.pending, outcome.transactions)) };
  };
}

/**
 * Every signature the step sent: its outcome's and each recorded pending transaction's, earlier
 * ones (re-signed after a blockhash expired) included, so a failed attempt's fee is counted too.
 */
function signaturesOf(pending: Record<string, PendingTx>, transactions: StepOutcome['transactions']): string[] {
  const all = new Set(transactions.map((t) => t.signature));
  for (const record of Object.values(pending)) {
    all.add(record.signature);
    for (const earlier of record.earlier ?? []) all.add(earlier.signature);
  }
  return [...all];
}

/** Wallets' key pairs kept by seed: at most this many (a full cache starts over). */
const PAYER_KEYS_MAX = 1024;

/**
 * The owners' wallet key pairs by seed, each derived once (a seed import and a public-key
 * derivation, ~0.1 ms, three times a launch before). A key pair is a function of its seed alone, so
 * an entry never goes stale: a wallet with another seed is another entry.
 */
class PayerKeys {
  private readonly bySeed = new Map<string, Keypair>();

  of(seed: Uint8Array): Keypair {
    const id = Buffer.from(seed.buffer, seed.byteOffset, seed.byteLength).toString('base64');
    let keypair = this.bySeed.get(id);
    if (!keypair) {
      if (this.bySeed.size >= PAYER_KEYS_MAX) this.bySeed.clear();
      keypair = keypairFromSeed(Buffer.from(seed));
      this.bySeed.set(id, keypair);
    }
    return keypair;
  }
}

/**
 * Launches' derived key pairs by launch id, each derived once for all of a launch's steps (two seed
 * imports and public-key derivations, ~0.1 ms a step before). They are a function of the master
 * secret and the launch id alone, so an entry never goes stale. At most {@link PAYER_KEYS_MAX}.
 */
class LaunchKeyCache {
  private readonly byLaunch = new Map<string, LaunchKeys>();

  constructor(private readonly master: Buffer) {}

  of(launchId: string): LaunchKeys {
    let keys = this.byLaunch.get(launchId);
    if (!keys) {
      if (this.byLaunch.size >= PAYER_KEYS_MAX) this.byLaunch.clear();
      keys = deriveLaunchKeys(this.master, launchId);
      this.byLaunch.set(launchId, keys);
    }
    return keys;
  }
}

/**
 * What the payer really spent in each of the step's transactions, from the chain's record of it:
 * the fee payer's lamports before minus after (a failed transaction's fee included). A transaction
 * that never landed costs nothing; one the chain cannot show yet (an RPC node that has not
 * finalized it) counts nothing here; the launch's release settles the rest. The embedded chain
 * answers the payer's balances of all of them in one read (`balancesAt`), no transaction decoded.
 */
async function spentBy(chain: ChainBackend, payer: StepContext['payer'], signatures: readonly string[]): Promise<StepSpends> {
  const spent: StepSpends = [];
  if (signatures.length === 0) return spent;
  if (chain.history.balancesAt) {
    const changes = await chain.history.balancesAt(payer.publicKey.toBase58(), signatures).catch(() => []);
    for (const change of changes) if (change && change.index === 0) spent.push({ signature: change.signature, lamports: change.pre - change.post });
    return spent;
  }
  for (const signature of signatures) {
    const tx = await chain.history.getTransaction(signature).catch(() => null);
    if (!tx || tx.accountKeys[0] !== payer.publicKey.toBase58()) continue;
    const before = tx.preBalances[0];
    const after = tx.postBalances[0];
    if (before !== undefined && after !== undefined) spent.push({ signature, lamports: before - after });
  }
  return spent;
}
