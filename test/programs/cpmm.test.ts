import { describe, expect, it } from 'vitest';
import { Keypair, PublicKey, SystemProgram, SYSVAR_RENT_PUBKEY } from '@solana/web3.js';
import { ACCOUNT_SIZE, AccountLayout, ASSOCIATED_TOKEN_PROGRAM_ID, NATIVE_MINT, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { accountDiscriminator, instructionDiscriminator } from '../../src/chain/programs/anchor.js';
import { CPMM_DEVNET_PROGRAM_ID, CPMM_MAINNET_PROGRAM_ID, cpmmDeployment } from '../../src/chain/programs/programIds.js';
import { AMM_CONFIG_SIZE, decodeAmmConfig } from '../../src/chain/programs/cpmm/ammConfig.js';
import { cpmmGenesisAccounts } from '../../src/chain/programs/cpmm/genesis.js';
import { initialLpAmount, initializeInstruction, isqrt, poolAddresses } from '../../src/chain/programs/cpmm/initialize.js';
import { ammConfigAddress, cpmmAuthorityAddress, orderMints, poolAddress } from '../../src/chain/programs/cpmm/pdas.js';
import { buildCreatePoolInstructions } from '../../src/chain/programs/cpmm/poolInstructions.js';
import { decodePoolState, POOL_STATE_SIZE, OBSERVATION_STATE_SIZE } from '../../src/chain/programs/cpmm/poolState.js';
import { rentExemptLamports } from '../../src/chain/programs/rent.js';

const deployment = cpmmDeployment(CPMM_MAINNET_PROGRAM_ID);
const pid = CPMM_MAINNET_PROGRAM_ID;
const low = new PublicKey(Buffer.alloc(32, 0x01));
const high = new PublicKey(Buffer.alloc(32, 0xf0));

describe('CPMM mint ordering', () => {
  it('orders mints by their 32 key bytes, not by base58 text', () => {
    // base58 text order and byte order disagree for these two keys.
    const a = new PublicKey(Buffer.concat([Buffer.from([0x01]), Buffer.alloc(31, 0x00)]));
    const b = new PublicKey(Buffer.concat([Buffer.from([0x0e]), Buffer.alloc(31, 0xff)]));
    expect(a.toBase58() > b.toBase58()).toBe(true);
    expect(orderMints(b, a)).toMatchObject({ token0: a, token1: b, swapped: true });
    expect(orderMints(a, b)).toMatchObject({ token0: a, token1: b, swapped: false });
  });

  it('refuses a pool of one mint with itself', () => {
    expect(() => orderMints(low, low)).toThrow(/two different mints/);
  });

  it('places wrapped SOL on whichever side its bytes demand', () => {
    const { instructions, addresses } = buildCreatePoolInstructions({
      deployment, payer: Keypair.generate().publicKey, mint: low, mintTokenProgram: TOKEN_PROGRAM_ID, payerToken: Keypair.generate().publicKey,
      tokenAmount: 1_000_000n, quoteLamports: 5_000_000_000n, lpRecipient: Keypair.generate().publicKey,
    });
    expect(addresses.token0.equals(low)).toBe(true);
    expect(addresses.token1.equals(NATIVE_MINT)).toBe(true);
    const init = instructions.find((i) => i.programId.equals(pid));
    expect(init?.data.readBigUInt64LE(8)).toBe(1_000_000n);
    expect(init?.data.readBigUInt64LE(16)).toBe(5_000_000_000n);

    const flipped = buildCreatePoolInstructions({
      deployment, payer: Keypair.generate().publicKey, mint: high, mintTokenProgram: TOKEN_PROGRAM_ID, payerToken: Keypair.generate().publicKey,
      tokenAmount: 1_000_000n, quoteLamports: 5_000_000_000n, lpRecipient: Keypair.generate().publicKey,
    });
    expect(flipped.addresses.token0.equals(NATIVE_MINT)).toBe(true);
    const flippedInit = flipped.instructions.find((i) => i.programId.equals(pid));
    expect(flippedInit?.data.readBigUInt64LE(8)).toBe(5_000_000_000n);
    expect(flippedInit?.data.readBigUInt64LE(16)).toBe(1_000_000n);
  });
});

describe('CPMM addresses', () => {
  it('derives config, authority and pool from the program seeds', () => {
    const [config] = ammConfigAddress(pid, 0);
    expect(config.equals(PublicKey.findProgramAddressSync([Buffer.from('amm_config'), Buffer.from([0, 0])], pid)[0])).toBe(true);
    // Mainnet's index-0 config, as Raydium publishes it.
    expect(config.toBase58()).toBe('D4FPEruKEHrG5TenZ2mpDGEfu1iUvTiqBxvpU8HLBvC2');
    expect(cpmmAuthorityAddress(pid).toBase58()).toBe('GpMZbSM2GgvTKHJirzeGfMFoaZ8UR2X7F4v8vHTvxFbL');
    const pool = poolAddress(pid, config, low, high);
    expect(pool.equals(PublicKey.findProgramAddressSync([Buffer.from('pool'), config.toBuffer(), low.toBuffer(), high.toBuffer()], pid)[0])).toBe(true);
  });

  it('knows the compiled-in fee receiver of the mainnet and devnet builds and asks for it otherwise', () => {
    expect(deployment.createPoolFeeReceiver.toBase58()).toBe('DNXgeM9EiiaAbaWvwjHj9fQQLAX5ZsfHyvmYUNRAdNC8');
    expect(cpmmDeployment(CPMM_DEVNET_PROGRAM_ID).createPoolFeeReceiver.toBase58()).toBe('3oE58BKVt8KuYkGxx8zBojugnymWmBiyafWgMrnb6eYy');
    expect(() => cpmmDeployment(Keypair.generate().publicKey)).toThrow(/createPoolFeeReceiver/);
  });
});

describe('CPMM initialize instruction', () => {
  const creator = new PublicKey(Buffer.alloc(32, 9));
  const side0 = { mint: low, tokenProgram: TOKEN_2022_PROGRAM_ID, creatorToken: new PublicKey(Buffer.alloc(32, 7)), amount: 42n };
  const side1 = { mint: high, tokenProgram: TOKEN_PROGRAM_ID, creatorToken: new PublicKey(Buffer.alloc(32, 8)), amount: 43n };

  it('carries the initialize discriminator and three little-endian u64 arguments', () => {
    const ix = initializeInstruction(deployment, creator, side0, side1, 1234n);
    expect([...ix.data.subarray(0, 8)]).toEqual([175, 175, 109, 31, 13, 152, 155, 237]);
    expect(ix.data.subarray(0, 8).equals(instructionDiscriminator('initialize'))).toBe(true);
    expect(ix.data.length).toBe(32);
    expect([ix.data.readBigUInt64LE(8), ix.data.readBigUInt64LE(16), ix.data.readBigUInt64LE(24)]).toEqual([42n, 43n, 1234n]);
  });

  it('lists the twenty accounts in program order with their flags', () => {
    const a = poolAddresses(deployment, creator, low, high);
    const ix = initializeInstruction(deployment, creator, side0, side1);
    const rows = ix.keys.map((k) => [k.pubkey.toBase58(), k.isSigner, k.isWritable]);
    expect(rows).toEqual([
      [creator, true, true],
      [a.ammConfig, false, false],
      [a.authority, false, false],
      [a.pool, false, true],
      [low, false, false],
      [high, false, false],
      [a.lpMint, false, true],
      [side0.creatorToken, false, true],
      [side1.creatorToken, false, true],
      [getAssociatedTokenAddressSync(a.lpMint, creator), false, true],
      [a.vault0, false, true],
      [a.vault1, false, true],
      [deployment.createPoolFeeReceiver, false, true],
      [a.observation, false, true],
      [TOKEN_PROGRAM_ID, false, false],
      [TOKEN_2022_PROGRAM_ID, false, false],
      [TOKEN_PROGRAM_ID, false, false],
      [ASSOCIATED_TOKEN_PROGRAM_ID, false, false],
      [SystemProgram.programId, false, false],
      [SYSVAR_RENT_PUBKEY, false, false],
    ].map(([k, s, w]) => [(k as PublicKey).toBase58(), s, w]));
  });

  it('refuses mints out of order', () => {
    expect(() => initializeInstruction(deployment, creator, side1, side0)).toThrow(/sort before/);
  });
});

describe('CPMM LP amount', () => {
  it('is floor(sqrt(a·b)) minus the 100 locked units', () => {
    expect(isqrt(99n)).toBe(9n);
    expect(isqrt(100n)).toBe(10n);
    expect(isqrt(2n ** 128n - 1n)).toBe(2n ** 64n - 1n);
    expect(initialLpAmount(300_000_000_000_000_000n, 5_000_000_000n)).toBe(38_729_833_462_074n - 100n);
    expect(() => initialLpAmount(100n, 100n)).toThrow(/too small/);
  });

  it('moves every LP token to the recipient and closes the payer accounts in the same transaction', () => {
    const payer = Keypair.generate().publicKey;
    const recipient = Keypair.generate().publicKey;
    const plan = buildCreatePoolInstructions({ deployment, payer, mint: high, mintTokenProgram: TOKEN_PROGRAM_ID, payerToken: Keypair.generate().publicKey, tokenAmount: 10_000n, quoteLamports: 40_000n, lpRecipient: recipient });
    expect(plan.lpAmount).toBe(20_000n - 100n);
    const transfer = plan.instructions.find((i) => i.programId.equals(TOKEN_PROGRAM_ID) && i.data[0] === 12);
    expect(transfer?.keys[2]?.pubkey.equals(plan.addresses.recipientLpToken)).toBe(true);
    expect(transfer?.data.readBigUInt64LE(1)).toBe(plan.lpAmount);
    const closes = plan.instructions.filter((i) => i.programId.equals(TOKEN_PROGRAM_ID) && i.data[0] === 9).map((i) => i.keys[0]?.pubkey.toBase58());
    expect(closes).toEqual([plan.addresses.creatorLpToken.toBase58(), plan.addresses.payerWsol.toBase58()]);
  });
});

describe('CPMM genesis accounts', () => {
  it('creates the wrapped-SOL mint, the index-0 AmmConfig at its PDA and a wrapped-SOL fee receiver at the compiled-in address', () => {
    const [nativeMint, config, receiver] = cpmmGenesisAccounts(pid);
    expect(nativeMint?.address.equals(NATIVE_MINT)).toBe(true);
    expect(nativeMint?.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    expect(config?.address.equals(ammConfigAddress(pid, 0)[0])).toBe(true);
    expect(config?.owner.equals(pid)).toBe(true);
    expect(config?.data.length).toBe(AMM_CONFIG_SIZE);
    expect(config?.data.subarray(0, 8).toString('hex')).toBe('daf42168cbcb2b6f');
    expect(config?.lamports).toBe(rentExemptLamports(AMM_CONFIG_SIZE));
    const decoded = decodeAmmConfig(config?.data ?? Buffer.alloc(0));
    expect(decoded).toMatchObject({ disableCreatePool: false, index: 0, tradeFeeRate: 2500n, createPoolFee: 150_000_000n });
    expect(decoded.bump).toBe(ammConfigAddress(pid, 0)[1]);

    expect(receiver?.address.toBase58()).toBe('DNXgeM9EiiaAbaWvwjHj9fQQLAX5ZsfHyvmYUNRAdNC8');
    expect(receiver?.owner.equals(TOKEN_PROGRAM_ID)).toBe(true);
    expect(receiver?.data.length).toBe(ACCOUNT_SIZE);
    const token = AccountLayout.decode(receiver?.data ?? Buffer.alloc(ACCOUNT_SIZE));
    expect(token.mint.equals(NATIVE_MINT)).toBe(true);
    expect(token.isNativeOption).toBe(1);
    expect(token.isNative).toBe(receiver?.lamports);
    expect(token.state).toBe(1);
  });

  it('follows the program id to the devnet fee receiver', () => {
    const [, config, receiver] = cpmmGenesisAccounts(CPMM_DEVNET_PROGRAM_ID);
    expect(config?.owner.equals(CPMM_DEVNET_PROGRAM_ID)).toBe(true);
    expect(receiver?.address.toBase58()).toBe('3oE58BKVt8KuYkGxx8zBojugnymWmBiyafWgMrnb6eYy');
  });
});

describe('CPMM PoolState decoder', () => {
  it('reads the packed layout: vaults, mints, LP mint and LP supply', () => {
    expect(POOL_STATE_SIZE).toBe(637);
    expect(OBSERVATION_STATE_SIZE).toBe(4075);
    const data = Buffer.alloc(POOL_STATE_SIZE);
    accountDiscriminator('PoolState').copy(data, 0);
    for (let i = 0; i < 10; i++) Buffer.alloc(32, i + 1).copy(data, 8 + 32 * i);
    data[330] = 9;
    data.writeBigUInt64LE(777n, 333);
    const pool = decodePoolState(data);
    expect(pool.token0Vault.equals(new PublicKey(Buffer.alloc(32, 3)))).toBe(true);
    expect(pool.lpMint.equals(new PublicKey(Buffer.alloc(32, 5)))).toBe(true);
    expect(pool.observationKey.equals(new PublicKey(Buffer.alloc(32, 10)))).toBe(true);
    expect(pool.lpMintDecimals).toBe(9);
    expect(pool.lpSupply).toBe(777n);
  });
});
