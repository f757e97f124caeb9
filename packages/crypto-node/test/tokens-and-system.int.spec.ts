import {
  CryptoRandomSource, RandomIdGenerator, RandomTokenGenerator, SystemClock, generateSecretKey,
} from '../src';

describe('RandomTokenGenerator', () => {
  it('generate returns 40 lowercase hex characters, different every time', () => {
    const tokens = new RandomTokenGenerator();

    const many = Array.from({ length: 200 }, () => tokens.generate());

    for (const token of many) expect(token).toMatch(/^[0-9a-f]{40}$/);
    expect(new Set(many).size).toBe(many.length);
  });

  it('hash is the SHA-256 hex digest (known vector)', () => {
    expect(new RandomTokenGenerator().hash('abc'))
      .toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('SystemClock', () => {
  it('now returns the current time', () => {
    const before = Date.now();
    const now = new SystemClock().now().getTime();
    const after = Date.now();

    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
  });
});

describe('RandomIdGenerator', () => {
  it('uuid returns distinct version-4 UUIDs', () => {
    const ids = new RandomIdGenerator();

    const many = Array.from({ length: 100 }, () => ids.uuid());

    for (const id of many) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(many).size).toBe(many.length);
  });
});

describe('CryptoRandomSource', () => {
  it('int stays in [0, max) and reaches every value', () => {
    const random = new CryptoRandomSource();

    const seen = new Set(Array.from({ length: 300 }, () => random.int(3)));

    expect([...seen].sort()).toEqual([0, 1, 2]);
  });

  it('int(1) is always 0', () => {
    expect(new CryptoRandomSource().int(1)).toBe(0);
  });

  it.each([0, -1, 1.5, 2 ** 49])('int(%p) throws a RangeError', (max) => {
    expect(() => new CryptoRandomSource().int(max)).toThrow(RangeError);
  });
});

describe('generateSecretKey', () => {
  it('returns 48 random bytes as 64 base64url characters', () => {
    const a = generateSecretKey();
    const b = generateSecretKey();

    expect(a).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(Buffer.from(a, 'base64url')).toHaveLength(48);
    expect(a).not.toBe(b);
  });
});
