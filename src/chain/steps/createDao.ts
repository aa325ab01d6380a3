import { PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { NonRetriableError } from '../../lib/retry.js';
import { daoRentLamports } from './costs.js';
import { decodeRealm } from '../programs/governance/accounts.js';
import { buildDaoInstructions } from '../programs/governance/instructions.js';
import { MAX_REALM_NAME_BYTES, realmAddress, type DaoAddresses } from '../programs/governance/pdas.js';
import { allocationAmount, requireProgram, sendOnce } from './support.js';
import { totalBaseUnits } from './allocations.js';
import { DEFAULT_PROGRAM_IDS, type ProgramIds } from '../programs/programIds.js';
import type { StepContext, StepExecutor } from './types.js';

/**
 * create_dao: one transaction on SPL Governance v3 — realm `dao.name` with the launched mint as
 * community mint, one governance over the mint, its native treasury, the treasury allocation moved
 * from the payer to the treasury's token account, and the realm authority handed to the
 * governance. Realm addresses depend on the name alone, so a name another realm holds fails the
 * launch (`invalid_configuration`). Result: `{dao: {realm, governance, treasury, …}}`.
 */
export function createDaoStep(ids: Pick<ProgramIds, 'governance'> = DEFAULT_PROGRAM_IDS): StepExecutor {
  const programId = new PublicKey(ids.governance);
  return async (ctx) => {
    const { plan, chain } = ctx;
    if (!plan.dao) throw new NonRetriableError('invalid_configuration', 'create_dao needs the dao section');
    if (plan.tokenStandard !== 'spl-token') {
      throw new NonRetriableError('invalid_configuration', 'SPL Governance realms need an spl-token community mint, not token-2022');
    }
    const name = plan.dao.name;
    const nameBytes = Buffer.byteLength(name, 'utf8');
    if (nameBytes === 0 || nameBytes > MAX_REALM_NAME_BYTES) {
      throw new NonRetriableError('invalid_configuration', `dao.name must be 1..${MAX_REALM_NAME_BYTES} bytes of UTF-8`);
    }
    await requireProgram(chain, programId, 'SPL Governance');
    const mint = ctx.keys.mint.publicKey;
    const payer = ctx.payer.publicKey;
    const treasuryAmount = plan.allocations.treasury > 0 ? allocationAmount(ctx, 'treasury') : 0n;
    let built: Awaited<ReturnType<typeof buildDaoInstructions>>;
    try {
      built = await buildDaoInstructions({
        name,
        communityMint: mint,
        decimals: plan.decimals,
        supply: totalBaseUnits(plan),
        votingPeriodSeconds: plan.dao.votingPeriodSeconds,
        quorumPercent: plan.dao.quorumPercent,
        payer,
        payerToken: getAssociatedTokenAddressSync(mint, payer, true, TOKEN_PROGRAM_ID),
        treasuryAmount,
        programId,
      });
    } catch (cause) {
      if (cause instanceof RangeError) throw new NonRetriableError('invalid_configuration', cause.message, { cause });
      throw cause;
    }
    const { addresses } = built;
    const sent = await sendOnce(ctx, {
      label: 'create_dao',
      type: 'dao',
      instructions: () => built.instructions,
      signers: [],
      rentLamports: await daoRentLamports((size) => chain.getMinimumBalanceForRentExemption(size), name),
      postcondition: () => daoCreated(ctx, programId, addresses),
    });
    if (ctx.capture) return { result: { dao: daoResult() }, transactions: [] }; // planning: nothing was sent
    if (!(await daoCreated(ctx, programId, addresses))) {
      throw new NonRetriableError('program_error', `realm ${addresses.realm.toBase58()} is not governed after its transaction`);
    }
    return { result: { dao: daoResult() }, transactions: sent ? [{ type: sent.type, signature: sent.signature }] : [] };

    function daoResult() {
      return {
        realm: addresses.realm.toBase58(),
        governance: addresses.governance.toBase58(),
        treasury: addresses.nativeTreasury.toBase58(),
        treasuryTokenAccount: addresses.treasuryToken.toBase58(),
        treasuryAmount: treasuryAmount.toString(),
        communityMint: mint.toBase58(),
        programId: programId.toBase58(),
        name,
      };
    }
  };
}

/** The default executor, on the canonical SPL Governance id. */
export const createDao: StepExecutor = createDaoStep();

/**
 * Postcondition: the realm exists for our mint and its authority is our governance (the last
 * instruction of the atomic transaction). A realm of that name for another mint means the name is
 * taken; one for our mint but another authority was not created by this launch.
 */
export async function daoCreated(ctx: StepContext, programId: PublicKey, addresses: DaoAddresses): Promise<boolean> {
  const info = await ctx.chain.getAccountInfo(addresses.realm);
  if (!info || !info.owner.equals(programId)) return false;
  const realm = decodeRealm(programId, info.data);
  if (!realm.communityMint.equals(ctx.keys.mint.publicKey)) {
    throw new NonRetriableError(
      'invalid_configuration',
      `dao.name "${realm.name}" is taken: realm ${realmAddress(realm.name, programId).toBase58()} governs another mint`,
    );
  }
  if (!realm.authority?.equals(addresses.governance)) {
    throw new NonRetriableError('program_error', `realm ${addresses.realm.toBase58()} for this mint has an unexpected authority`);
  }
  return true;
}
