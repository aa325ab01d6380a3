import { PublicKey } from '@solana/web3.js';
import { NonRetriableError } from '../../lib/retry.js';
import { readMint, tokenProgramOf } from './chainReads.js';
import { createMetaplexMetadataInstruction, metaplexMetadataAddress } from '../programs/metaplex/metadata.js';
import { METAPLEX_TOKEN_METADATA_PROGRAM_ID } from '../programs/programIds.js';
import { readTokenMetadata } from '../programs/token2022/tokenMetadata.js';
import { sendOnce } from './support.js';
import type { StepContext, StepExecutor } from './types.js';
import { METAPLEX_CREATE_FEE_LAMPORTS, METAPLEX_METADATA_MAX_SIZE } from './launchCosts.js';


/**
 * create_metadata. Token-2022: the metadata was written by create_mint; this step verifies it on
 * chain. spl-token: creates the Metaplex metadata account (CreateMetadataAccountV3) with the
 * creator as update authority; needs the Metaplex program on the chain. Result: `{metadata}`.
 */
export const createMetadata: StepExecutor = async (ctx) => {
  const { plan, chain, keys } = ctx;
  const mint = keys.mint.publicKey;
  if (plan.tokenStandard === 'token-2022') {
    if (ctx.capture) return { result: { metadata: mint.toBase58() }, transactions: [] }; // planning: the mint is not there yet
    const state = await readMint(chain, mint, tokenProgramOf(plan));
    const meta = state ? readTokenMetadata(state) : null;
    if (!meta || meta.name !== plan.name || meta.symbol !== plan.ticker || meta.uri !== plan.uri) {
      throw new NonRetriableError('program_error', `token metadata of mint ${mint.toBase58()} is missing or differs from the request`);
    }
    return { result: { metadata: mint.toBase58() }, transactions: [] };
  }

  if (!(await chain.isProgramExecutable(METAPLEX_TOKEN_METADATA_PROGRAM_ID))) {
    throw new NonRetriableError(
      'chain_capability_missing',
      `Metaplex Token Metadata (${METAPLEX_TOKEN_METADATA_PROGRAM_ID.toBase58()}) is not executable on the configured chain`,
    );
  }
  const metadata = metaplexMetadataAddress(mint);
  const sent = await sendOnce(ctx, {
    label: 'create_metadata',
    type: 'metadata',
    instructions: () => [
      createMetaplexMetadataInstruction({
        mint,
        mintAuthority: ctx.payer.publicKey,
        payer: ctx.payer.publicKey,
        updateAuthority: new PublicKey(plan.creator),
        name: plan.name,
        symbol: plan.ticker,
        uri: plan.uri,
      }),
    ],
    signers: [],
    // The program takes its create fee on top of the account's rent.
    rentLamports: (await chain.getMinimumBalanceForRentExemption(METAPLEX_METADATA_MAX_SIZE)) + METAPLEX_CREATE_FEE_LAMPORTS,
    postcondition: () => metaplexMetadataExists(ctx, metadata),
  });
  return { result: { metadata: metadata.toBase58() }, transactions: sent ? [{ type: sent.type, signature: sent.signature }] : [] };
};

async function metaplexMetadataExists(ctx: StepContext, metadata: PublicKey): Promise<boolean> {
  const info = await ctx.chain.getAccountInfo(metadata);
  return info !== null && info.owner.equals(METAPLEX_TOKEN_METADATA_PROGRAM_ID);
}
