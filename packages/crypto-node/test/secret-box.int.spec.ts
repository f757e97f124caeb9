import { createDecipheriv, hkdfSync } from 'node:crypto';
import { AesGcmSecretBox, SECRET_BOX_KDF_INFO, SECRET_BOX_KDF_SALT } from '../src';

const SECRET = 'a-long-random-server-secret-for-tests-only-0123456789';

function replacePart(sealed: string, index: number, change: (bytes: Buffer) => void): string {
  const parts = sealed.split(':');
  const bytes = Buffer.from(parts[index] ?? '', 'base64');
  change(bytes);
  parts[index] = bytes.toString('base64');
  return parts.join(':');
}

describe('AesGcmSecretBox', () => {
  it.each([
    ['a PEM key', '-----BEGIN PRIVATE KEY-----\nMIIEv...\n-----END PRIVATE KEY-----\n'],
    ['unicode', 'p\u00e4ssw\u00f6rd \u{1F511}'],
    ['an empty string', ''],
  ])('seal then open returns %s unchanged', (_name, plaintext) => {
    const box = new AesGcmSecretBox(SECRET);

    expect(box.open(box.seal(plaintext))).toBe(plaintext);
  });

  it('seal writes v1 with a 12-byte IV and a 16-byte tag, and never the plaintext', () => {
    const sealed = new AesGcmSecretBox(SECRET).seal('visible?');

    const [version, iv, tag, ciphertext] = sealed.split(':');
    expect(version).toBe('v1');
    expect(Buffer.from(iv ?? '', 'base64')).toHaveLength(12);
    expect(Buffer.from(tag ?? '', 'base64')).toHaveLength(16);
    expect(Buffer.from(ciphertext ?? '', 'base64')).toHaveLength('visible?'.length);
    expect(sealed).not.toContain('visible');
  });

  it('seal of the same text twice gives different values (fresh IV)', () => {
    const box = new AesGcmSecretBox(SECRET);

    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('open in another instance with the same secret succeeds (the key is derived, not random)', () => {
    const sealed = new AesGcmSecretBox(SECRET).seal('persisted');

    expect(new AesGcmSecretBox(SECRET).open(sealed)).toBe('persisted');
  });

  it('seal uses the documented derivation: HKDF-SHA256 with the exported salt and info', () => {
    const sealed = new AesGcmSecretBox(SECRET).seal('independent');
    const [, iv, tag, ciphertext] = sealed.split(':') as [string, string, string, string];
    const key = Buffer.from(hkdfSync('sha256', SECRET, SECRET_BOX_KDF_SALT, SECRET_BOX_KDF_INFO, 32));

    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from('v1'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]);

    expect(plain.toString('utf8')).toBe('independent');
  });

  it('open with a different secret throws', () => {
    const sealed = new AesGcmSecretBox(SECRET).seal('secret');

    expect(() => new AesGcmSecretBox(`${SECRET}x`).open(sealed)).toThrow(/wrong secret key or tampered/);
  });

  it.each([
    ['ciphertext', 3],
    ['tag', 2],
    ['iv', 1],
  ])('open of a value with a flipped bit in the %s throws', (_name, index) => {
    const box = new AesGcmSecretBox(SECRET);
    const tampered = replacePart(box.seal('secret'), index, (bytes) => {
      bytes[0] = (bytes[0] ?? 0) ^ 1;
    });

    expect(() => box.open(tampered)).toThrow(Error);
  });

  it.each([
    ['empty', ''],
    ['plain text', 'secret'],
    ['another version', 'v2:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:AAAA'],
    ['a short IV', 'v1:AAAA:AAAAAAAAAAAAAAAAAAAAAA==:AAAA'],
    ['non-base64 data', 'v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:***'],
  ])('open of a malformed value (%s) throws', (_name, sealed) => {
    expect(() => new AesGcmSecretBox(SECRET).open(sealed)).toThrow(/Cannot open sealed value/);
  });

  it('constructor with an empty secret throws', () => {
    expect(() => new AesGcmSecretBox('')).toThrow(Error);
  });
});
