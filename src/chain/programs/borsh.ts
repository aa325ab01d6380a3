/**
 * The one Borsh writer and reader of the chain layer: little-endian fields for the fixed-layout
 * (Borsh / zero-copy) instruction arguments and accounts of the programs we call, plus Borsh
 * strings (u32 length, then UTF-8). Only the widths those layouts use.
 */

/** A Borsh string: u32 little-endian length prefix, then the UTF-8 bytes. */
export function borshString(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(bytes.length);
  return Buffer.concat([len, bytes]);
}

/** Appends little-endian fields and returns the bytes. */
export class LayoutWriter {
  private readonly parts: Buffer[] = [];

  bytes(value: Uint8Array): this {
    this.parts.push(Buffer.from(value));
    return this;
  }

  u8(value: number): this {
    const b = Buffer.alloc(1);
    b.writeUInt8(value);
    return this.bytes(b);
  }

  bool(value: boolean): this {
    return this.u8(value ? 1 : 0);
  }

  u16(value: number): this {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(value);
    return this.bytes(b);
  }

  u64(value: bigint): this {
    if (value < 0n || value > 0xffff_ffff_ffff_ffffn) throw new RangeError(`u64 out of range: ${value}`);
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(value);
    return this.bytes(b);
  }

  /** Fills `length` zero bytes (padding / reserved fields). */
  zeros(length: number): this {
    return this.bytes(Buffer.alloc(length));
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** Reads little-endian fields at given offsets, throwing on short data. */
export class LayoutReader {
  private readonly buf: Buffer;

  constructor(data: Uint8Array) {
    this.buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }

  get length(): number {
    return this.buf.length;
  }

  private need(offset: number, width: number): void {
    if (offset + width > this.buf.length) {
      throw new RangeError(`account data too short: need ${offset + width} bytes, have ${this.buf.length}`);
    }
  }

  u8(offset: number): number {
    this.need(offset, 1);
    return this.buf.readUInt8(offset);
  }

  u16(offset: number): number {
    this.need(offset, 2);
    return this.buf.readUInt16LE(offset);
  }

  u32(offset: number): number {
    this.need(offset, 4);
    return this.buf.readUInt32LE(offset);
  }

  u64(offset: number): bigint {
    this.need(offset, 8);
    return this.buf.readBigUInt64LE(offset);
  }

  /** The Borsh string at `offset` and the offset just after it (where the next field starts). */
  string(offset: number): { value: string; end: number } {
    const length = this.u32(offset);
    return { value: this.bytes(offset + 4, length).toString('utf8'), end: offset + 4 + length };
  }

  bytes(offset: number, length: number): Buffer {
    this.need(offset, length);
    return Buffer.from(this.buf.subarray(offset, offset + length));
  }
}
