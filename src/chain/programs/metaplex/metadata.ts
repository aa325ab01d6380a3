import { PublicKey, SystemProgram, TransactionInstruction } from '@solana/web3.js';
import { borshString, LayoutReader } from '../borsh.js';
import { METAPLEX_TOKEN_METADATA_PROGRAM_ID } from '../programIds.js';

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
  // key u8, update authority, mint, then the three strings (padded with NULs by the program).
  const reader = new LayoutReader(data);
  const name = reader.string(65);
  const symbol = reader.string(name.end);
  const uri = reader.string(symbol.end);
  const trim = (s: string) => s.replace(/\0+$/, '');
  return {
    updateAuthority: new PublicKey(reader.bytes(1, 32)),
    mint: new PublicKey(reader.bytes(33, 32)),
    name: trim(name.value),
    symbol: trim(symbol.value),
    uri: trim(uri.value),
  };
}
