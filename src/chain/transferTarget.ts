import type { PublicKey } from '@solana/web3.js';
import type { ChainBackend } from './backend.js';

/**
 * Addresses the runtime reserves (its builtin programs, precompiles, loaders and sysvars) and the
 * incinerator, which burns what it receives: a transfer to any of them fails on chain (the fee
 * paid for nothing) or loses the lamports. Listed because some have no account to read.
 */
const RESERVED: ReadonlyMap<string, string> = new Map([
  ...[
    '11111111111111111111111111111111',
    'AddressLookupTab1e1111111111111111111111111',
    'BPFLoader1111111111111111111111111111111111',
    'BPFLoader2111111111111111111111111111111111',
    'BPFLoaderUpgradeab1e11111111111111111111111',
    'ComputeBudget111111111111111111111111111111',
    'Config1111111111111111111111111111111111111',
    'Ed25519SigVerify111111111111111111111111111',
    'Feature111111111111111111111111111111111111',
    'KeccakSecp256k11111111111111111111111111111',
    'LoaderV411111111111111111111111111111111111',
    'NativeLoader1111111111111111111111111111111',
    'Secp256r1SigVerify1111111111111111111111111',
    'Stake11111111111111111111111111111111111111',
    'StakeConfig11111111111111111111111111111111',
    'Vote111111111111111111111111111111111111111',
    'ZkE1Gama1Proof11111111111111111111111111111',
    'ZkTokenProof1111111111111111111111111111111',
  ].map((a) => [a, 'a builtin program'] as const),
  ...[
    'Sysvar1111111111111111111111111111111111111',
    'SysvarC1ock11111111111111111111111111111111',
    'SysvarEpochRewards1111111111111111111111111',
    'SysvarEpochSchedu1e111111111111111111111111',
    'SysvarFees111111111111111111111111111111111',
    'Sysvar1nstructions1111111111111111111111111',
    'SysvarLastRestartS1ot1111111111111111111111',
    'SysvarRecentB1ockHashes11111111111111111111',
    'SysvarRent111111111111111111111111111111111',
    'SysvarRewards111111111111111111111111111111',
    'SysvarS1otHashes111111111111111111111111111',
    'SysvarS1otHistory11111111111111111111111111',
    'SysvarStakeHistory1111111111111111111111111',
  ].map((a) => [a, 'a sysvar'] as const),
  ['1nc1nerator11111111111111111111111111111111', 'the incinerator (it burns what it receives)'],
]);

/** Owners whose accounts are programs or their data: lamports sent there cannot be moved out by the sender. */
const PROGRAM_OWNERS: ReadonlyMap<string, string> = new Map([
  ['Sysvar1111111111111111111111111111111111111', 'a sysvar'],
  ['NativeLoader1111111111111111111111111111111', 'a builtin program'],
  ['BPFLoader1111111111111111111111111111111111', 'a program'],
  ['BPFLoader2111111111111111111111111111111111', 'a program'],
  ['BPFLoaderUpgradeab1e11111111111111111111111', "a program or a program's data account"],
  ['LoaderV411111111111111111111111111111111111', 'a program'],
]);

/** Every reserved address, for tests and docs. */
export const RESERVED_ADDRESSES: readonly string[] = [...RESERVED.keys()];

/**
 * Why a plain system transfer of `lamports` to `to` cannot land as meant, or undefined when it
 * can: `to` is a program, a sysvar or another reserved address, an executable account, or it does
 * not exist and `lamports` is below the rent-exempt minimum of an empty account (the transfer
 * would fail on chain, fee paid). Read before anything is signed (docs/funding.md, "Withdrawals").
 */
export async function transferTargetProblem(chain: Pick<ChainBackend, 'getAccountInfo' | 'getMinimumBalanceForRentExemption'>, to: PublicKey, lamports: bigint): Promise<string | undefined> {
  const reserved = RESERVED.get(to.toBase58());
  if (reserved !== undefined) return `is ${reserved}`;
  const account = await chain.getAccountInfo(to);
  if (account === null) {
    const floor = await chain.getMinimumBalanceForRentExemption(0);
    return lamports < BigInt(floor) ? `has no account yet, and ${lamports} lamports is below the ${floor} a new account needs (the rent-exempt minimum)` : undefined;
  }
  const owned = PROGRAM_OWNERS.get(account.owner.toBase58());
  if (account.executable) return `is an executable account (a program, owned by ${account.owner.toBase58()}): lamports sent there are stranded`;
  if (owned !== undefined) return `is ${owned}: lamports sent there are stranded`;
  return undefined;
}
