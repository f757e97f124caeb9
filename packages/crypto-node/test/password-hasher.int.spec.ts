import { scryptSync } from 'node:crypto';
import { ScryptPasswordHasher } from '../src';

// A low cost keeps the suite fast; one test below runs the default cost.
const cheap = () => new ScryptPasswordHasher({ N: 1024, r: 8, p: 1 });

describe('ScryptPasswordHasher', () => {
  it('hash with the default cost writes a self-describing scrypt hash that verifies', async () => {
    const hasher = new ScryptPasswordHasher();

    const stored = await hasher.hash('correct horse');

    const parts = stored.split('$');
    expect(parts.slice(0, 4)).toEqual(['scrypt', '16384', '8', '1']);
    expect(Buffer.from(parts[4] ?? '', 'base64')).toHaveLength(16);
    expect(Buffer.from(parts[5] ?? '', 'base64')).toHaveLength(32);
    await expect(hasher.verify('correct horse', stored)).resolves.toBe(true);
  });

  it('hash stores exactly scrypt(password, salt) with the stated parameters', async () => {
    const stored = await cheap().hash('s3cret');

    const [, n, r, p, salt, hash] = stored.split('$') as [string, string, string, string, string, string];
    const expected = scryptSync('s3cret', Buffer.from(salt, 'base64'), 32, { N: Number(n), r: Number(r), p: Number(p) });
    expect(hash).toBe(expected.toString('base64'));
  });

  it('verify with a wrong password returns false', async () => {
    const hasher = cheap();
    const stored = await hasher.hash('s3cret');

    await expect(hasher.verify('s3cret ', stored)).resolves.toBe(false);
    await expect(hasher.verify('', stored)).resolves.toBe(false);
  });

  it('hash of the same password twice uses different salts', async () => {
    const hasher = cheap();

    const [a, b] = await Promise.all([hasher.hash('same'), hasher.hash('same')]);

    expect(a).not.toBe(b);
  });

  it('verify reads the cost from the stored hash, not from its own settings', async () => {
    const stored = await new ScryptPasswordHasher({ N: 2048, r: 4, p: 2 }).hash('pw');

    expect(stored.startsWith('scrypt$2048$4$2$')).toBe(true);
    await expect(new ScryptPasswordHasher().verify('pw', stored)).resolves.toBe(true);
  });

  it('verify treats composed and decomposed accents as the same password', async () => {
    const hasher = cheap();
    const stored = await hasher.hash('caf\u00e9');

    await expect(hasher.verify('cafe\u0301', stored)).resolves.toBe(true);
  });

  it('verify of a hash with one flipped byte returns false', async () => {
    const hasher = cheap();
    const stored = await hasher.hash('pw');
    const parts = stored.split('$');
    const hash = Buffer.from(parts[5] ?? '', 'base64');
    hash[0] = (hash[0] ?? 0) ^ 1;
    parts[5] = hash.toString('base64');

    await expect(hasher.verify('pw', parts.join('$'))).resolves.toBe(false);
  });

  const salt = Buffer.alloc(16, 7).toString('base64');
  const hash = Buffer.alloc(32, 9).toString('base64');
  it.each([
    ['empty', ''],
    ['plain text', 'pw'],
    ['another scheme', `bcrypt$1024$8$1$${salt}$${hash}`],
    ['too few fields', `scrypt$1024$8$${salt}$${hash}`],
    ['too many fields', `scrypt$1024$8$1$1$${salt}$${hash}`],
    ['N not a power of two', `scrypt$1000$8$1$${salt}$${hash}`],
    ['N far too large', `scrypt$1073741824$8$1$${salt}$${hash}`],
    ['r of zero', `scrypt$1024$0$1$${salt}$${hash}`],
    ['non-decimal p', `scrypt$1024$8$0x1$${salt}$${hash}`],
    ['salt not base64', `scrypt$1024$8$1$not*base64$${hash}`],
    ['hash too short', `scrypt$1024$8$1$${salt}$${Buffer.alloc(4).toString('base64')}`],
    ['empty hash', `scrypt$1024$8$1$${salt}$`],
  ])('verify of a malformed hash (%s) returns false without throwing', async (_name, stored) => {
    await expect(cheap().verify('pw', stored)).resolves.toBe(false);
  });

  it('constructor with a cost that is not a power of two throws', () => {
    expect(() => new ScryptPasswordHasher({ N: 1000 })).toThrow(RangeError);
    expect(() => new ScryptPasswordHasher({ p: 0 })).toThrow(RangeError);
  });
});
