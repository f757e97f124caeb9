import { WireReader, mpintBits } from '../src/wire';

function field(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

describe('WireReader', () => {
  it('readString returns consecutive fields and atEnd turns true after the last', () => {
    const reader = new WireReader(Buffer.concat([field(Buffer.from('ssh-rsa')), field(Buffer.from([1, 0, 1]))]));

    expect(reader.readString()?.toString()).toBe('ssh-rsa');
    expect(reader.atEnd()).toBe(false);
    expect(reader.readString()).toEqual(Buffer.from([1, 0, 1]));
    expect(reader.atEnd()).toBe(true);
    expect(reader.readString()).toBeNull();
  });

  it('readString with a length that overruns the blob returns null', () => {
    const blob = Buffer.concat([Buffer.from([0, 0, 0, 9]), Buffer.from('short')]);

    expect(new WireReader(blob).readString()).toBeNull();
  });

  it('readString with fewer than four bytes left returns null', () => {
    expect(new WireReader(Buffer.from([0, 0, 1])).readString()).toBeNull();
  });
});

describe('mpintBits', () => {
  it.each([
    [[], 0],
    [[0x01], 1],
    [[0x7f], 7],
    [[0x00, 0x80], 8],
    [[0x01, 0x00], 9],
    [[0x00, 0xff, 0xff], 16],
  ])('mpintBits(%p) is %p', (bytes, bits) => {
    expect(mpintBits(Buffer.from(bytes))).toBe(bits);
  });

  it('mpintBits of a 2048-bit modulus with its sign byte is 2048', () => {
    const modulus = Buffer.concat([Buffer.from([0x00, 0xc1]), Buffer.alloc(255, 0x11)]);

    expect(mpintBits(modulus)).toBe(2048);
  });

  it.each([
    ['negative', [0x80]],
    ['a needless leading zero', [0x00, 0x01]],
    ['a lone zero byte', [0x00]],
  ])('mpintBits of a %s encoding is null', (_name, bytes) => {
    expect(mpintBits(Buffer.from(bytes))).toBeNull();
  });
});
