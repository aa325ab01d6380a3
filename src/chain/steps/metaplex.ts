import { PublicKey, SystemProgram, TransactionInstruction } from '@solana/web3.js';
import { BorshReader, borshString } from './borsh.js';

/** Metaplex Token Metadata program (mainnet and devnet). */
export const METAPLEX_TOKEN_METADATA_PROGRAM_ID = new PublicKey('metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s');

const CREATE_METADATA_ACCOUNT_V3 = 33;

/** The metadata PDA of a mint: ["metadata", program id, mint]. */
export function metaplexMetadataAddress(mint: PublicKey, programId = METAPLEX_TOKEN_METADATA_PROGRAM_ID): PublicKey {
  return PublicKey.findProgramAddressSync([Buffer.from('metadata'), programId.toBuffer(), mint.toBuffer()], programId)[0];
}

/**
 * CreateMetadataAccountV3, hand-encoded: DataV2 {name, symbol, uri, seller_fee_basis_points = 0,
 * creators = None, collection = None, uses = None}, is_mutable = true, collection_details = None.
 */
export function createMetaplexMetadataInstruction(args: {
  mint: PublicKey;
  mintAuthority: PublicKey;
  payer: PublicKey;
  updateAuthority: PublicKey;
  name: string;
  symbol: string;
  uri: string;
  programId?: PublicKey;
}): TransactionInstruction {
  const programId = args.programId ?? METAPLEX_TOKEN_METADATA_PROGRAM_ID;
  const data = Buffer.concat([
    Buffer.from([CREATE_METADATA_ACCOUNT_V3]),
    borshString(args.name),
    borshString(args.symbol),
    borshString(args.uri),
    Buffer.from([0, 0]), // seller_fee_basis_points u16
    Buffer.from([0, 0, 0]), // creators, collection, uses: None
    Buffer.from([1]), // is_mutable
    Buffer.from([0]), // collection_details: None
  ]);
  return new TransactionInstruction({
    programId,
    keys: [
      { pubkey: metaplexMetadataAddress(args.mint, programId), isSigner: false, isWritable: true },
      { pubkey: args.mint, isSigner: false, isWritable: false },
      { pubkey: args.mintAuthority, isSigner: true, isWritable: false },
      { pubkey: args.payer, isSigner: true, isWritable: true },
      { pubkey: args.updateAuthority, isSigner: false, isWritable: false },
      { pubkey: SystemProgram.programId, isSigner: false, isWritable: false },
    ],
    data,
  });
}

/** Reads name, symbol and uri of a Metaplex metadata account (padding trimmed). */
export function readMetaplexMetadata(data: Uint8Array): { updateAuthority: PublicKey; mint: PublicKey; name: string; symbol: string; uri: string } {
  const reader = new BorshReader(data);
  reader.bytes(1);
  const updateAuthority = new PublicKey(reader.bytes(32));
  const mint = new PublicKey(reader.bytes(32));
  const trim = (s: string) => s.replace(/\0+$/, '');
  return { updateAuthority, mint, name: trim(reader.string()), symbol: trim(reader.string()), uri: trim(reader.string()) };
}
