import { PublicKey } from '@solana/web3.js';
import type { GenesisAccount } from '../cpmm/genesis.js';
import { rentExemptLamports } from '../rent.js';
import { DBC_PROGRAM_ID } from '../programIds.js';
import { dbcPoolAuthority } from './pdas.js';

/** DAMM v2 configs DBC migrates into, one per fixed fee tier (mainnet addresses, as the SDK lists them), with their fee in bps. */
export const DAMM_V2_MIGRATION_CONFIGS: Array<{ address: PublicKey; feeBps: number }> = [
  { address: new PublicKey('7F6dnUcRuyM2TwR8myT1dYypFXpPSxqwKNSFNkxyNESd'), feeBps: 25 },
  { address: new PublicKey('2nHK1kju6XjphBLbNxpM5XRGFj7p9U8vvNzyZiha1z6k'), feeBps: 30 },
  { address: new PublicKey('Hv8Lmzmnju6m7kcokVKvwqz7QPmdX9XfKjJsXz8RXcjp'), feeBps: 100 },
  { address: new PublicKey('2c4cYd4reUYVRAB9kUUkrq55VPyy2FNQ3FDL4o12JXmq'), feeBps: 200 },
  { address: new PublicKey('AkmQWebAwFvWk55wBoCr5D62C6VVDTzi84NJuD9H7cFD'), feeBps: 400 },
  { address: new PublicKey('DbCRBj8McvPYHJG1ukj8RE15h2dCNUdTAESG49XpQ44u'), feeBps: 600 },
];

const CONFIG_DISCRIMINATOR = Buffer.from([155, 12, 170, 224, 30, 250, 204, 130]);
const MIN_SQRT_PRICE = 4295048016n;
const MAX_SQRT_PRICE = 79226673521066979257578248091n;
/** DAMM v2's Config account: 8-byte discriminator + its zero-copy body. */
export const DAMM_V2_CONFIG_SIZE = 8 + 32 + 32 + 128 + 1 + 1 + 1 + 5 + 8 + 16 + 16 + 16 + 64;

/**
 * DAMM v2's Config, written byte for byte (zero-copy layout of the program's `Config`): a static
 * config whose pool creator is DBC's pool authority, a flat fee (linear scheduler, no periods),
 * activation by timestamp, the full price range.
 */
export function encodeDammV2Config(args: { poolCreatorAuthority: PublicKey; feeBps: number; index: number }): Buffer {
  const data = Buffer.alloc(DAMM_V2_CONFIG_SIZE);
  let o = 0;
  CONFIG_DISCRIMINATOR.copy(data, o); o += 8;
  o += 32; // vault_config_key: none
  args.poolCreatorAuthority.toBuffer().copy(data, o); o += 32;
  // pool_fees: base_fee (32: cliff_fee_numerator u64, base_fee_mode u8, padding 5, number_of_period u16, period_frequency u64, reduction_factor u64)
  data.writeBigUInt64LE(BigInt(args.feeBps) * 100_000n, o); o += 32;
  o += 48; // dynamic_fee: not initialized
  data.writeUInt8(20, o); // protocol_fee_percent
  data.writeUInt8(20, o + 2); // referral_fee_percent
  o += 8; // protocol, padding, referral, padding[3], compounding_fee_bps u16
  o += 40; // padding2 [u64; 5]
  data.writeUInt8(1, o); o += 1; // activation_type: timestamp
  data.writeUInt8(0, o); o += 1; // collect_fee_mode: both tokens
  data.writeUInt8(0, o); o += 1; // config_type: static
  o += 5;
  data.writeBigUInt64LE(BigInt(args.index), o); o += 8;
  writeU128(data, o, MIN_SQRT_PRICE); o += 16;
  writeU128(data, o, MAX_SQRT_PRICE); o += 16;
  return data;
}

function writeU128(data: Buffer, offset: number, value: bigint): void {
  data.writeBigUInt64LE(value & 0xffff_ffff_ffff_ffffn, offset);
  data.writeBigUInt64LE(value >> 64n, offset + 8);
}

/** The DAMM v2 configs a curve graduates into, as mainnet has them (docs/programs.md). */
export function dammV2GenesisAccounts(programId: PublicKey): GenesisAccount[] {
  const authority = dbcPoolAuthority(DBC_PROGRAM_ID);
  return DAMM_V2_MIGRATION_CONFIGS.map((c, index) => ({
    address: c.address,
    owner: programId,
    lamports: rentExemptLamports(DAMM_V2_CONFIG_SIZE),
    data: encodeDammV2Config({ poolCreatorAuthority: authority, feeBps: c.feeBps, index }),
    executable: false,
  }));
}

export function dammV2GenesisHook(programId: PublicKey): { programId: PublicKey; accounts(): GenesisAccount[] } {
  return { programId, accounts: () => dammV2GenesisAccounts(programId) };
}
