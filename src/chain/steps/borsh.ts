/** The few Borsh pieces the hand-encoded instructions need. */

/** u32 little-endian length prefix, then UTF-8 bytes. */
export function borshString(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(bytes.length);
  return Buffer.concat([len, bytes]);
}

/** Sequential reader over Borsh-encoded bytes; throws when the data ends early. */
export class BorshReader {
  private offset = 0;
  constructor(private readonly data: Uint8Array) {}

  bytes(length: number): Uint8Array {
    if (this.offset + length > this.data.length) throw new Error('borsh data ended early');
    const out = this.data.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  u32(): number {
    return Buffer.from(this.bytes(4)).readUInt32LE(0);
  }

  string(): string {
    return Buffer.from(this.bytes(this.u32())).toString('utf8');
  }
}
