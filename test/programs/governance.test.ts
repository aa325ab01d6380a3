import { describe, expect, it } from 'vitest';
import { Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { ASSOCIATED_TOKEN_PROGRAM_ID, TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { SPL_GOVERNANCE_PROGRAM_ID } from '../../src/chain/programs/programIds.js';
import { buildDaoInstructions, governanceConfig, proposalThreshold } from '../../src/chain/programs/governance/instructions.js';
import { daoAddresses, governanceAddress, nativeTreasuryAddress, realmAddress, realmConfigAddress, tokenHoldingAddress } from '../../src/chain/programs/governance/pdas.js';

const gov = SPL_GOVERNANCE_PROGRAM_ID;
const mint = new PublicKey(Buffer.alloc(32, 5));
const pda = (seeds: Buffer[]) => PublicKey.findProgramAddressSync(seeds, gov)[0];

describe('SPL Governance addresses', () => {
  it('derives realm, holding, config, governance and native treasury from the program seeds', () => {
    const realm = realmAddress('Demo DAO');
    expect(realm.equals(pda([Buffer.from('governance'), Buffer.from('Demo DAO')]))).toBe(true);
    expect(tokenHoldingAddress(realm, mint).equals(pda([Buffer.from('governance'), realm.toBuffer(), mint.toBuffer()]))).toBe(true);
    expect(realmConfigAddress(realm).equals(pda([Buffer.from('realm-config'), realm.toBuffer()]))).toBe(true);
    const governance = governanceAddress(realm, mint);
    expect(governance.equals(pda([Buffer.from('account-governance'), realm.toBuffer(), mint.toBuffer()]))).toBe(true);
    expect(nativeTreasuryAddress(governance).equals(pda([Buffer.from('native-treasury'), governance.toBuffer()]))).toBe(true);
  });

  it('governs the launched mint, so every DAO address is known before sending', () => {
    const a = daoAddresses('Demo DAO', mint);
    expect(a.governedAccount.equals(mint)).toBe(true);
    expect(a.treasuryToken.equals(getAssociatedTokenAddressSync(mint, a.nativeTreasury, true))).toBe(true);
    expect(daoAddresses('Demo DAO', mint).governance.equals(a.governance)).toBe(true);
  });

  it('rejects realm names that cannot be a PDA seed', () => {
    expect(() => realmAddress('')).toThrow(/1\.\.32 bytes/);
    expect(() => realmAddress('x'.repeat(33))).toThrow(/1\.\.32 bytes/);
    expect(() => realmAddress('é'.repeat(17))).toThrow(/1\.\.32 bytes/);
  });
});

describe('SPL Governance config', () => {
  it('maps quorumPercent to a community yes-vote threshold and votingPeriodSeconds to the base voting time', () => {
    const config = governanceConfig({ quorumPercent: 10, votingPeriodSeconds: 259_200, supply: 1_000_000_000n });
    expect(config.communityVoteThreshold.value).toBe(10);
    expect(config.baseVotingTime).toBe(259_200);
    expect(config.minCommunityTokensToCreateProposal.toString()).toBe('10000000');
  });

  it('refuses thresholds and voting times the program or builders reject', () => {
    expect(() => governanceConfig({ quorumPercent: 0, votingPeriodSeconds: 3600, supply: 1n })).toThrow(/quorumPercent/);
    expect(() => governanceConfig({ quorumPercent: 101, votingPeriodSeconds: 3600, supply: 1n })).toThrow(/quorumPercent/);
    expect(() => governanceConfig({ quorumPercent: 50, votingPeriodSeconds: 3599, supply: 1n })).toThrow(/votingPeriodSeconds/);
  });

  it('needs at least one raw unit to propose, even for tiny supplies', () => {
    expect(proposalThreshold(50n)).toBe(1n);
    expect(proposalThreshold(1000n)).toBe(10n);
  });
});

describe('DAO transaction', () => {
  const payer = new PublicKey(Buffer.alloc(32, 1));
  const payerToken = getAssociatedTokenAddressSync(mint, payer);
  const request = {
    name: 'Demo DAO', communityMint: mint, decimals: 9, supply: 1_000_000_000_000_000_000n, votingPeriodSeconds: 259_200,
    quorumPercent: 10, payer, payerToken, treasuryAmount: 350_000_000_000_000_000n,
  };

  it('creates realm, governance and treasury, funds the treasury and hands the realm to the governance, in that order', async () => {
    const { instructions, addresses } = await buildDaoInstructions(request);
    expect(instructions.map((i) => [i.programId.toBase58(), i.data[0]])).toEqual([
      [gov.toBase58(), 0], // CreateRealm
      [gov.toBase58(), 4], // CreateGovernance
      [gov.toBase58(), 25], // CreateNativeTreasury
      [ASSOCIATED_TOKEN_PROGRAM_ID.toBase58(), 1], // CreateIdempotent
      [TOKEN_PROGRAM_ID.toBase58(), 12], // TransferChecked
      [gov.toBase58(), 21], // SetRealmAuthority
    ]);
    const [realmIx, governanceIx, treasuryIx, , transferIx, authorityIx] = instructions;
    expect(realmIx?.keys.slice(0, 5).map((k) => k.pubkey.toBase58())).toEqual(
      [addresses.realm, payer, mint, addresses.communityTokenHolding, payer].map((k) => k.toBase58()),
    );
    expect(realmIx?.keys.some((k) => k.pubkey.equals(addresses.realmConfig) && k.isWritable)).toBe(true);
    expect(realmIx?.data.includes(Buffer.from('Demo DAO'))).toBe(true);
    expect(governanceIx?.keys.slice(0, 3).map((k) => k.pubkey.toBase58())).toEqual(
      [addresses.realm, addresses.governance, mint].map((k) => k.toBase58()),
    );
    // YesVotePercentage(10), then min tokens to propose (1% of supply) as u64 LE.
    expect([governanceIx?.data[1], governanceIx?.data[2]]).toEqual([0, 10]);
    expect(governanceIx?.data.readBigUInt64LE(3)).toBe(10_000_000_000_000_000n);
    expect(governanceIx?.data.readUInt32LE(15)).toBe(259_200);
    expect(treasuryIx?.keys[1]?.pubkey.equals(addresses.nativeTreasury)).toBe(true);
    expect(transferIx?.keys[2]?.pubkey.equals(addresses.treasuryToken)).toBe(true);
    expect(transferIx?.data.readBigUInt64LE(1)).toBe(request.treasuryAmount);
    expect(authorityIx?.keys.map((k) => k.pubkey.toBase58())).toContain(addresses.governance.toBase58());
    expect(authorityIx?.data[1]).toBe(1); // SetChecked
  });

  it('needs only the payer to sign and fits one legacy transaction', async () => {
    const { instructions } = await buildDaoInstructions({ ...request, name: 'x'.repeat(32) });
    const signers = new Set(instructions.flatMap((i) => i.keys.filter((k) => k.isSigner).map((k) => k.pubkey.toBase58())));
    expect([...signers]).toEqual([payer.toBase58()]);
    const tx = new Transaction({ feePayer: payer, blockhash: Keypair.generate().publicKey.toBase58(), lastValidBlockHeight: 1 }).add(...instructions);
    const size = tx.serialize({ requireAllSignatures: false, verifySignatures: false }).length;
    // Leave room for two compute-budget instructions the backend may prepend.
    expect(size).toBeLessThan(1232 - 60);
  });
});
