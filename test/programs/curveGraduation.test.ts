import BN from 'bn.js';
import { Keypair, PublicKey, type Connection, type Transaction } from '@solana/web3.js';
import { createDammV2Program, DAMM_V2_MIGRATION_FEE_ADDRESS, deriveDammV2PoolAddress, DynamicBondingCurveClient, SwapMode } from '@meteora-ag/dynamic-bonding-curve-sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChainBackend } from '../../src/chain/backend.js';
import { createEmbeddedBackend, type EmbeddedBackend } from '../../src/chain/embedded/backend.js';
import { curveKit, migrationFeeOption } from '../../src/chain/programs/dbc/curve.js';
import { DAMM_V2_CONFIG_SIZE, DAMM_V2_MIGRATION_CONFIGS, dammV2GenesisHook, encodeDammV2Config } from '../../src/chain/programs/dbc/dammGenesis.js';
import { dbcGenesisHook } from '../../src/chain/programs/dbc/genesis.js';
import { dbcPoolAuthority } from '../../src/chain/programs/dbc/pdas.js';
import { DAMM_V2_PROGRAM_ID, DBC_PROGRAM_ID, DEFAULT_PROGRAM_IDS } from '../../src/chain/programs/programIds.js';
import { manualClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { StepHarness, samplePlan, tempDatabase } from '../chain/support/fixtures.js';
import { haveBinaries, needs, programsDir } from './support/binaries.js';

describe('the DAMM v2 configs the embedded chain writes', () => {
  it('decode with the program IDL the SDK ships as static configs of DBC pool authority at the mainnet addresses and fee tiers', () => {
    const coder = createDammV2Program({ rpcEndpoint: 'offline' } as unknown as Connection).coder;
    expect(DAMM_V2_MIGRATION_CONFIGS.map((c) => c.address.toBase58())).toEqual(DAMM_V2_MIGRATION_FEE_ADDRESS.slice(0, 6).map(String));
    for (const [index, config] of DAMM_V2_MIGRATION_CONFIGS.entries()) {
      const data = encodeDammV2Config({ poolCreatorAuthority: dbcPoolAuthority(DBC_PROGRAM_ID), feeBps: config.feeBps, index });
      expect(data.length).toBe(DAMM_V2_CONFIG_SIZE);
      const decoded = coder.accounts.decode('config', data) as Record<string, any>;
      expect(decoded.poolCreatorAuthority.toBase58()).toBe('FhVo3mqL8PW5pH5U2CN4XE33DokiyZnUwuGpH2hmHLuM');
      expect(decoded.vaultConfigKey.toBase58()).toBe(PublicKey.default.toBase58());
      expect(decoded.activationType).toBe(1);
      expect(decoded.configType).toBe(0);
      expect(Buffer.from(decoded.poolFees.baseFee.data).readBigUInt64LE(0)).toBe(BigInt(config.feeBps) * 100_000n);
      expect(decoded.sqrtMinPrice.toString()).toBe('4295048016');
      expect(decoded.sqrtMaxPrice.toString()).toBe('79226673521066979257578248091');
    }
  });
});

const IDS = [DEFAULT_PROGRAM_IDS.curve, DEFAULT_PROGRAM_IDS.amm];

/** Meteora's SDK over our chain backend: the outside traders' and migrator's code, not ours. */
function outside(chain: ChainBackend) {
  const connection = {
    rpcEndpoint: 'embedded',
    getAccountInfo: (key: PublicKey) => chain.getAccountInfo(key),
    getAccountInfoAndContext: async (key: PublicKey) => ({ context: { slot: 0 }, value: await chain.getAccountInfo(key) }),
  } as unknown as Connection;
  const client = new DynamicBondingCurveClient(connection, 'confirmed');
  const send = async (tx: Transaction, signers: Keypair[]) => {
    const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
    tx.recentBlockhash = blockhash;
    tx.feePayer = signers[0]!.publicKey;
    tx.sign(...signers);
    const signature = await chain.sendRawTransaction(tx.serialize());
    await chain.confirmTransaction(signature, lastValidBlockHeight);
  };
  return { client, send };
}

describe.skipIf(!haveBinaries(...IDS))(`a full curve graduates to DAMM v2 on the embedded chain${needs(...IDS)}`, () => {
  let chain: EmbeddedBackend;
  let close: () => Promise<void>;
  beforeEach(async () => {
    const tmp = await tempDatabase();
    const opened = await tmp.open();
    chain = await createEmbeddedBackend({
      db: opened.db, secretKey: Buffer.alloc(32, 9), clock: manualClock(Date.UTC(2026, 10, 22, 12)), logger: silentLogger(), programsDir,
      genesisHooks: [dbcGenesisHook(DBC_PROGRAM_ID), dammV2GenesisHook(DAMM_V2_PROGRAM_ID)],
    });
    close = async () => {
      await chain.close();
      await opened.close();
      tmp.cleanup();
    };
  });
  afterEach(async () => close());

  it('outside buys through the SDK fill our curve, and the permissionless migration (SDK) creates the DAMM v2 pool', async () => {
    const plan = samplePlan({
      totalSupply: 1_000_000_000n,
      allocations: { creator: 0, vesting: 0, treasury: 0, pool: 100 },
      pool: { kind: 'bonding-curve', quoteMint: 'So11111111111111111111111111111111111111112', initialMarketCap: '30', graduationMarketCap: '400', graduationSupplyPercent: 20, tradingFeeBps: 100, creatorFeePercent: 50, antiSniping: false, firstBuy: { quoteAmount: '0.5' } },
    });
    const outcome = await new StepHarness(chain, plan).run('create_curve');
    const result = outcome.result as { mint: string; pool: { address: string; graduationQuoteLamports: string } };
    const pool = new PublicKey(result.pool.address);
    const kit = await curveKit();
    const { client, send } = outside(chain);

    const trader = Keypair.generate();
    await chain.requestAirdrop!(trader.publicKey, 100_000_000_000n);
    // Partial fill: the last buy takes what is left of the curve (an exact-in buy past its end is refused).
    for (let i = 0; i < 12 && kit.decodeCurveState((await chain.getAccountInfo(pool))!.data).migrationProgress === 0; i += 1) {
      const tx = await client.pool.swap2({ owner: trader.publicKey, pool, swapMode: SwapMode.PartialFill, amountIn: new BN(10_000_000_000 + i), minimumAmountOut: new BN(0), swapBaseForQuote: false, referralTokenAccount: null });
      await send(tx, [trader]);
    }
    const full = kit.decodeCurveState((await chain.getAccountInfo(pool))!.data);
    expect(full.quoteReserve >= BigInt(result.pool.graduationQuoteLamports)).toBe(true);
    expect(full.migrationProgress).toBe(2); // no locked vesting: ready to migrate at once

    const dammConfig = DAMM_V2_MIGRATION_CONFIGS.find((c) => c.feeBps === migrationFeeOption(100).bps)!.address;
    const migrator = Keypair.generate();
    await chain.requestAirdrop!(migrator.publicKey, 1_000_000_000n);
    const { transaction, firstPositionNftKeypair, secondPositionNftKeypair } = await client.migration.migrateToDammV2({ payer: migrator.publicKey, pool, dammConfig });
    await send(transaction, [migrator, firstPositionNftKeypair, secondPositionNftKeypair]);

    expect(kit.decodeCurveState((await chain.getAccountInfo(pool))!.data).isMigrated).toBe(true);
    const amm = deriveDammV2PoolAddress(dammConfig, new PublicKey(result.mint), new PublicKey('So11111111111111111111111111111111111111112'));
    expect((await chain.getAccountInfo(amm))?.owner.toBase58()).toBe(DAMM_V2_PROGRAM_ID.toBase58());
  });
});
