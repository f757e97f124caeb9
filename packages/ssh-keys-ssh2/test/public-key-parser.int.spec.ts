import { createHash, generateKeyPairSync } from 'node:crypto';
import { utils } from 'ssh2';
import { DomainError, ValidationFailed } from '@svc/core';
import { generateEd25519Pair } from '@svc/builder-git';
import { Ssh2PublicKeyParser } from '../src';

// Computed once with `ssh-keygen -lf` (OpenSSH) on keys it generated; stored so the test
// does not need ssh-keygen.
const KNOWN_ED25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILpjpGG40G2mDwlKt3InEbxagftHD7+0Etd2SbY3V9A2 alice@example.com';
const KNOWN_ED25519_FINGERPRINT = 'SHA256:3Mdvs53fuf2tPAvju7M+rN+CWcN/oDQ+BLMWWE9e3Yo';
const KNOWN_RSA_3072 = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQCeEzP9y1HedKUbnh/xYNjyUwqU+YCNEMUr+uTLzGbPcjP1o6myr9dEIXZ66At0gbKMQ1yePpdF1elzFZkqAN9gO3GlXaf3AlSj/ks7Z90gcQiSoIK4JiIFrpPFnrty/VBrz8xfeWe5G/fucO34oqPG51h45jeQeCMD9y+hEth5VjftOu7U9tQq/zkKCm2abm7d7tBLfBhEh2G0V0NIzYJu696bmT42RplgjHPW7oDk65Ut4lUE8FbkhcHw92TXwm+Edr29FiAo5xk9ptSrXUB3nc+dTU8+i86f57MGKFUmpINY8zDJPRX9q3C618FwEutYm1CUI64JA6aspwRf+eWUpRKuopIhccxgREgGnv/R58mQus4RB2PkG+fKRtEsqMxwvy8I1lOKJh9Qq1tAWlUuoQhwVx4egdU1h3wo7URNjKQ8vi1KOIQ0au5Nc2Bij65FObdWhR5XEixA/4HeqwhPPvHjDtnfG3q8g/cVORxgGIv5ELRGfGgtrVHMI702r8s= bob@laptop';
const KNOWN_RSA_3072_FINGERPRINT = 'SHA256:G/MXzKDeBDCHHeh55QrOaZ86Eg7Aid2vua2blMysXBU';

const parser = new Ssh2PublicKeyParser();

function field(bytes: Buffer | string): Buffer {
  const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  return Buffer.concat([length, data]);
}

function blobOf(line: string): Buffer {
  return Buffer.from(line.split(' ')[1] ?? '', 'base64');
}

function fingerprintOf(line: string): string {
  return `SHA256:${createHash('sha256').update(blobOf(line)).digest('base64').replace(/=+$/, '')}`;
}

/** The single message the parser gives for field `public`; fails the test if it does not reject. */
function rejection(text: string): string {
  let caught: unknown;
  try {
    parser.parse(text);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ValidationFailed);
  expect(DomainError.is(caught)).toBe(true);
  const fields = (caught as ValidationFailed).fields ?? {};
  expect(Object.keys(fields)).toEqual(['public']);
  expect(fields.public).toHaveLength(1);
  return fields.public?.[0] ?? '';
}

const generated = {
  ed25519: generateEd25519Pair(),
  ecdsa256: utils.generateKeyPairSync('ecdsa', { bits: 256 }),
  ecdsa384: utils.generateKeyPairSync('ecdsa', { bits: 384 }),
  ecdsa521: utils.generateKeyPairSync('ecdsa', { bits: 521 }),
  rsa2048: utils.generateKeyPairSync('rsa', { bits: 2048 }),
  rsa1024: utils.generateKeyPairSync('rsa', { bits: 1024 }),
};

describe('Ssh2PublicKeyParser', () => {
  describe('accepts supported keys', () => {
    it.each([
      ['ed25519', generated.ed25519.public, 'ssh-ed25519', 256],
      ['ecdsa P-256', generated.ecdsa256.public, 'ecdsa-sha2-nistp256', 256],
      ['ecdsa P-384', generated.ecdsa384.public, 'ecdsa-sha2-nistp384', 384],
      ['ecdsa P-521', generated.ecdsa521.public, 'ecdsa-sha2-nistp521', 521],
      ['rsa 2048', generated.rsa2048.public, 'ssh-rsa', 2048],
    ])('parse of a generated %s key returns its type, size and SHA-256 fingerprint', (_name, line, type, bits) => {
      const parsed = parser.parse(line);

      expect(parsed).toEqual({ type, bits, fingerprint: fingerprintOf(line), normalized: line.trim() });
    });

    it('parse of a known ed25519 key gives the fingerprint ssh-keygen prints', () => {
      expect(parser.parse(KNOWN_ED25519)).toEqual({
        type: 'ssh-ed25519',
        bits: 256,
        fingerprint: KNOWN_ED25519_FINGERPRINT,
        normalized: KNOWN_ED25519,
      });
    });

    it('parse of a known 3072-bit RSA key gives the size and fingerprint ssh-keygen prints', () => {
      const parsed = parser.parse(KNOWN_RSA_3072);

      expect(parsed.bits).toBe(3072);
      expect(parsed.fingerprint).toBe(KNOWN_RSA_3072_FINGERPRINT);
    });

    it('parse trims surrounding whitespace and joins the fields with single spaces', () => {
      const [type, data] = KNOWN_ED25519.split(' ') as [string, string];

      const parsed = parser.parse(`\n  ${type}\t ${data}   alice@example.com  \r\n`);

      expect(parsed.normalized).toBe(KNOWN_ED25519);
    });

    it('parse keeps a comment that contains spaces', () => {
      const line = `${generated.ed25519.public} work laptop (2026)`;

      expect(parser.parse(line).normalized).toBe(line);
    });

    it('parse without a comment normalizes to type and key only', () => {
      const withoutComment = KNOWN_ED25519.split(' ').slice(0, 2).join(' ');

      expect(parser.parse(withoutComment).normalized).toBe(withoutComment);
    });

    it('parse of key data without base64 padding restores the padding', () => {
      const line = generated.ecdsa256.public.trim();
      expect(line.endsWith('=')).toBe(true);

      const parsed = parser.parse(line.replace(/=+$/, ''));

      expect(parsed.normalized).toBe(line);
      expect(parsed.fingerprint).toBe(fingerprintOf(line));
    });
  });

  describe('rejects', () => {
    it('an RSA key of 1024 bits, naming its size', () => {
      expect(rejection(generated.rsa1024.public)).toBe('RSA keys must have at least 2048 bits; this key has 1024 bits.');
    });

    it.each(['', '   ', '\n\t\n'])('empty text %p', (text) => {
      expect(rejection(text)).toBe('Enter an SSH public key.');
    });

    it('two keys on two lines', () => {
      expect(rejection(`${generated.ed25519.public}\n${generated.ecdsa256.public}`))
        .toBe('Enter exactly one public key, on a single line.');
    });

    it('an OpenSSH private key', () => {
      expect(rejection(generated.ed25519.private)).toMatch(/^This is a private key\./);
    });

    it('a PKCS#8 PEM private key', () => {
      const { privateKey } = generateKeyPairSync('ed25519');
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

      expect(rejection(pem)).toMatch(/^This is a private key\./);
    });

    it('a DSA key', () => {
      const blob = Buffer.concat(['ssh-dss', Buffer.alloc(129, 1), Buffer.alloc(21, 2), Buffer.alloc(128, 3), Buffer.alloc(128, 4)]
        .map((part) => field(part)));

      expect(rejection(`ssh-dss ${blob.toString('base64')} old@host`)).toMatch(/^DSA keys \(ssh-dss\) are not supported\./);
    });

    it('an unknown key type, naming it', () => {
      expect(rejection('ssh-foo AAAAB3NzaC1mb28= x')).toMatch(/^Unsupported key type "ssh-foo"\. Use ssh-ed25519/);
    });

    it('an OpenSSH certificate', () => {
      expect(rejection('ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29t'))
        .toBe('SSH certificates are not supported. Enter the plain public key.');
    });

    it('a single word that is not a key line', () => {
      expect(rejection(blobOf(KNOWN_ED25519).toString('base64'))).toMatch(/^This is not an OpenSSH public key/);
    });

    it.each([
      ['characters outside base64', 'ssh-ed25519 AAAA*C3NzaC1lZDI1NTE5'],
      ['misplaced padding', 'ssh-ed25519 AA=AC3NzaC1lZDI1NTE5'],
    ])('key data with %s', (_name, text) => {
      expect(rejection(text)).toBe('The key data is not valid base64.');
    });

    it('a type that does not match the type inside the key data, naming both', () => {
      const data = blobOf(generated.ed25519.public).toString('base64');

      expect(rejection(`ssh-rsa ${data}`))
        .toBe('The key type "ssh-rsa" does not match the key data, which is "ssh-ed25519".');
    });

    it('an ECDSA type whose key data is for another curve', () => {
      const data = blobOf(generated.ecdsa384.public).toString('base64');

      expect(rejection(`ecdsa-sha2-nistp256 ${data}`)).toMatch(/does not match the key data, which is "ecdsa-sha2-nistp384"/);
    });

    it.each([
      ['truncated', (blob: Buffer) => blob.subarray(0, blob.length - 3)],
      ['with trailing bytes', (blob: Buffer) => Buffer.concat([blob, Buffer.from([0, 0, 0, 0])])],
      ['a type field only', (_blob: Buffer) => field('ssh-ed25519')],
    ])('ed25519 key data %s', (_name, change) => {
      const data = change(blobOf(generated.ed25519.public)).toString('base64');

      expect(rejection(`ssh-ed25519 ${data}`)).toBe('The key data is malformed.');
    });

    it('ECDSA key data naming the wrong curve inside', () => {
      const point = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]);
      const blob = Buffer.concat([field('ecdsa-sha2-nistp256'), field('nistp384'), field(point)]);

      expect(rejection(`ecdsa-sha2-nistp256 ${blob.toString('base64')}`)).toBe('The key data is malformed.');
    });

    it('an ECDSA point that is not on the curve', () => {
      const point = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]);
      const blob = Buffer.concat([field('ecdsa-sha2-nistp256'), field('nistp256'), field(point)]);

      expect(rejection(`ecdsa-sha2-nistp256 ${blob.toString('base64')}`)).toBe('The key data is malformed.');
    });

    it('an RSA key whose modulus is encoded as negative', () => {
      const blob = Buffer.concat([field('ssh-rsa'), field(Buffer.from([1, 0, 1])), field(Buffer.alloc(256, 0xff))]);

      expect(rejection(`ssh-rsa ${blob.toString('base64')}`)).toBe('The key data is malformed.');
    });
  });
});
