import { PublicKey } from '@solana/web3.js';
import { accountDiscriminator, hasDiscriminator } from '../anchor.js';
import { LayoutReader, LayoutWriter } from '../borsh.js';

/** `AmmConfig::LEN`: discriminator + 1 + 1 + 2 + 4×u64 + 2 keys + creator fee u64 + 15×u64 padding. */
export const AMM_CONFIG_SIZE = 8 + 1 + 1 + 2 + 4 * 8 + 32 * 2 + 8 + 8 * 15;

/** A CPMM AmmConfig: fee rates in millionths, `createPoolFee` in lamports. */
export interface AmmConfig {
  bump: number;
  disableCreatePool: boolean;
  index: number;
  tradeFeeRate: bigint;
  protocolFeeRate: bigint;
  fundFeeRate: bigint;
  createPoolFee: bigint;
  protocolOwner: PublicKey;
  fundOwner: PublicKey;
  /** Present since the creator-fee release; older builds keep zero padding here. */
  creatorFeeRate: bigint;
}

const DISCRIMINATOR = accountDiscriminator('AmmConfig');

/** Serializes an AmmConfig account (Anchor discriminator + Borsh fields + zero padding). */
export function encodeAmmConfig(config: AmmConfig): Buffer {
  return new LayoutWriter()
    .bytes(DISCRIMINATOR)
    .u8(config.bump)
    .bool(config.disableCreatePool)
    .u16(config.index)
    .u64(config.tradeFeeRate)
    .u64(config.protocolFeeRate)
    .u64(config.fundFeeRate)
    .u64(config.createPoolFee)
    .bytes(config.protocolOwner.toBuffer())
    .bytes(config.fundOwner.toBuffer())
    .u64(config.creatorFeeRate)
    .zeros(8 * 15)
    .toBuffer();
}

/** Decodes an AmmConfig account; throws on foreign data. */
export function decodeAmmConfig(data: Uint8Array): AmmConfig {
  if (!hasDiscriminator(data, DISCRIMINATOR)) throw new Error('not a CPMM AmmConfig account');
  const r = new LayoutReader(data);
  return {
    bump: r.u8(8),
    disableCreatePool: r.u8(9) !== 0,
    index: r.u16(10),
    tradeFeeRate: r.u64(12),
    protocolFeeRate: r.u64(20),
    fundFeeRate: r.u64(28),
    createPoolFee: r.u64(36),
    protocolOwner: new PublicKey(r.bytes(44, 32)),
    fundOwner: new PublicKey(r.bytes(76, 32)),
    creatorFeeRate: r.u64(108),
  };
}
