/** Reads the length-prefixed fields of an SSH wire-format public key blob (RFC 4251). */
export class WireReader {
  private offset = 0;

  constructor(private readonly bytes: Buffer) {}

  /** The next `string` field, or null when the blob ends or the length overruns it. */
  readString(): Buffer | null {
    if (this.offset + 4 > this.bytes.length) return null;
    const length = this.bytes.readUInt32BE(this.offset);
    const start = this.offset + 4;
    if (length > this.bytes.length - start) return null;
    this.offset = start + length;
    return this.bytes.subarray(start, start + length);
  }

  /** True once every byte has been consumed. */
  atEnd(): boolean {
    return this.offset === this.bytes.length;
  }
}

/** Bit length of a non-negative SSH `mpint`; null if the encoding is negative or not minimal. */
export function mpintBits(mpint: Buffer): number | null {
  if (mpint.length === 0) return 0;
  const first = mpint[0] ?? 0;
  // A set top bit would make the value negative (two's complement).
  if ((first & 0x80) !== 0) return null;
  let start = 0;
  if (first === 0) {
    // A leading zero is only allowed to keep the next byte's top bit from reading as a sign.
    if (mpint.length === 1 || ((mpint[1] ?? 0) & 0x80) === 0) return null;
    start = 1;
  }
  const top = mpint[start] ?? 0;
  return (mpint.length - start - 1) * 8 + (32 - Math.clz32(top));
}
