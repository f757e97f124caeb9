import { X509Certificate, createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DomainError, ValidationFailed, type FieldErrors } from '@svc/core';
import { CERTIFICATE_MESSAGES, ForgeCertificateParser, KEY_MESSAGES } from '../src';
import { readWithForge } from '../src/read-forge';
import { readWithNodeCrypto } from '../src/read-node';
import { rsaKeys, selfSignedRsaCertificate, type RsaKeys } from './certificate-builder';

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', name), 'utf8');

// Printed by `openssl x509 -noout -fingerprint -sha256 -dates` when the fixtures were made.
const EC_FINGERPRINT = '59:17:2F:F4:28:AD:BE:CE:13:3D:26:C6:3D:F1:6B:35:44:70:E1:B4:16:1E:4A:0B:15:F8:D3:40:2E:CC:CE:AE';
const ED25519_FINGERPRINT = 'AF:3F:42:E0:0A:17:AA:2E:12:A8:E0:49:9E:C5:E2:22:AA:E6:5C:7C:1B:27:93:B8:88:EA:05:77:5A:C3:73:6A';
const FIXTURE_STARTS = new Date('2026-11-21T08:34:46Z');
const FIXTURE_EXPIRES = new Date('2126-10-28T08:34:46Z');

const parser = new ForgeCertificateParser();

/** The field errors of a rejected parse; fails the test if the parse succeeds. */
function fieldErrors(certificatePem: string, keyPem: string): FieldErrors {
  let caught: unknown;
  try {
    parser.parse(certificatePem, keyPem);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ValidationFailed);
  expect(DomainError.is(caught)).toBe(true);
  return (caught as ValidationFailed).fields ?? {};
}

function derOf(pem: string): Buffer {
  return new X509Certificate(pem).raw;
}

describe('ForgeCertificateParser', () => {
  let keys: RsaKeys;
  let rsaPem: string;
  const notBefore = new Date('2026-01-02T03:04:05Z');
  const notAfter = new Date('2126-01-02T03:04:05Z');

  beforeAll(() => {
    keys = rsaKeys();
    rsaPem = selfSignedRsaCertificate({
      keys,
      subject: [
        { shortName: 'C', value: 'DE' },
        { shortName: 'O', value: 'Example Org' },
        { shortName: 'CN', value: 'rsa.example.com' },
      ],
      dnsNames: ['rsa.example.com', 'www.rsa.example.com', 'api.rsa.example.com'],
      notBefore,
      notAfter,
    });
  });

  describe('RSA certificates (read by node-forge)', () => {
    it('parse returns the subject CN, DNS names in order, issuer, fingerprint, validity and PEM', () => {
      const parsed = parser.parse(rsaPem, keys.privatePkcs8);

      const der = derOf(rsaPem);
      expect(parsed).toEqual({
        commonName: 'rsa.example.com',
        san: ['rsa.example.com', 'www.rsa.example.com', 'api.rsa.example.com'],
        issuer: 'CN=rsa.example.com,O=Example Org,C=DE',
        fingerprint: new X509Certificate(der).fingerprint256,
        starts: notBefore,
        expires: notAfter,
        pem: new X509Certificate(der).toString(),
      });
      expect(parsed.fingerprint).toBe(createHash('sha256').update(der).digest('hex').toUpperCase().match(/../g)?.join(':'));
    });

    it('parse accepts the key in PKCS#1 form as well', () => {
      expect(parser.parse(rsaPem, keys.privatePkcs1).commonName).toBe('rsa.example.com');
    });

    it('parse of a certificate with CRLF line ends and text around it returns canonical PEM', () => {
      const messy = `Subject: rsa.example.com\r\n${rsaPem.replace(/\n/g, '\r\n')}\r\ntrailing notes`;

      const parsed = parser.parse(messy, keys.privatePkcs8);

      expect(parsed.pem).toMatch(/^-----BEGIN CERTIFICATE-----\n([A-Za-z0-9+/=]{64}\n)*[A-Za-z0-9+/=]{1,64}\n-----END CERTIFICATE-----\n$/);
      expect(new X509Certificate(parsed.pem).raw.equals(derOf(rsaPem))).toBe(true);
    });

    it('parse of a certificate without a CN returns commonName null and still the DNS names', () => {
      const pem = selfSignedRsaCertificate({
        keys, subject: [{ shortName: 'O', value: 'No Name Inc' }], dnsNames: ['only-san.example.com'], notBefore, notAfter,
      });

      const parsed = parser.parse(pem, keys.privatePkcs8);

      expect(parsed.commonName).toBeNull();
      expect(parsed.san).toEqual(['only-san.example.com']);
      expect(parsed.issuer).toBe('O=No Name Inc');
    });

    it('parse of a certificate without a SAN extension returns an empty san list', () => {
      const pem = selfSignedRsaCertificate({
        keys, subject: [{ shortName: 'CN', value: 'plain.example.com' }], dnsNames: [], notBefore, notAfter,
      });

      expect(parser.parse(pem, keys.privatePkcs8).san).toEqual([]);
    });
  });

  describe('both readers', () => {
    it('forge and node:crypto give the same fields for one certificate, hostile names included', () => {
      const pem = selfSignedRsaCertificate({
        keys,
        subject: [
          { shortName: 'C', value: 'US' },
          { shortName: 'O', value: 'Foo, Inc. + "Bar";<x>' },
          { shortName: 'OU', value: '\u00dcn\u00efcode \u65e5\u672c' },
          { shortName: 'CN', value: '#hash.example.com ' },
        ],
        dnsNames: ['a.example.com', 'weird, DNS:evil.example.com', '*.example.org'],
        notBefore,
        notAfter,
      });
      const x509 = new X509Certificate(pem);

      const fromForge = readWithForge(x509.raw);
      const fromNode = readWithNodeCrypto(x509);

      expect(fromForge).not.toBeNull();
      expect(fromNode).toEqual(fromForge);
      expect(fromNode.san).toEqual(['a.example.com', 'weird, DNS:evil.example.com', '*.example.org']);
      expect(fromNode.issuer).toBe('CN=\\#hash.example.com\\ ,OU=\u00dcn\u00efcode \u65e5\u672c,O=Foo\\, Inc. \\+ \\"Bar\\"\\;\\<x\\>,C=US');
      expect(fromNode.commonName).toBe('#hash.example.com ');
    });

    it('forge cannot read an ECDSA certificate, which is why node:crypto reads those', () => {
      expect(readWithForge(derOf(fixture('ec-p256.crt.pem')))).toBeNull();
    });
  });

  describe('ECDSA and Ed25519 certificates (read by node:crypto)', () => {
    it('parse of the ECDSA P-256 fixture returns the values openssl printed', () => {
      const parsed = parser.parse(fixture('ec-p256.crt.pem'), fixture('ec-p256.key.pem'));

      expect(parsed).toEqual({
        commonName: 'ec.example.com',
        san: ['ec.example.com', 'www.ec.example.com'],
        issuer: 'CN=Example Test CA,O=Example',
        fingerprint: EC_FINGERPRINT,
        starts: FIXTURE_STARTS,
        expires: FIXTURE_EXPIRES,
        pem: fixture('ec-p256.crt.pem'),
      });
    });

    it('parse of the Ed25519 fixture returns the values openssl printed', () => {
      const parsed = parser.parse(fixture('ed25519.crt.pem'), fixture('ed25519.key.pem'));

      expect(parsed).toEqual({
        commonName: 'ed.example.com',
        san: ['ed.example.com'],
        issuer: 'CN=Example Test CA,O=Example',
        fingerprint: ED25519_FINGERPRINT,
        starts: FIXTURE_STARTS,
        expires: FIXTURE_EXPIRES,
        pem: fixture('ed25519.crt.pem'),
      });
    });

    it('parse of a chain (leaf, then CA) reads the leaf', () => {
      const parsed = parser.parse(fixture('ec-p256-chain.pem'), fixture('ec-p256.key.pem'));

      expect(parsed.fingerprint).toBe(EC_FINGERPRINT);
      expect(parsed.commonName).toBe('ec.example.com');
      expect(parsed.pem).toBe(fixture('ec-p256.crt.pem'));
    });

    it('parse accepts the EC key in PKCS#8 form and a SEC1 key preceded by EC PARAMETERS', () => {
      const pkcs8 = createPrivateKey(fixture('ec-p256.key.pem')).export({ type: 'pkcs8', format: 'pem' }).toString();
      const withParameters = `-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n${fixture('ec-p256.key.pem')}`;

      expect(parser.parse(fixture('ec-p256.crt.pem'), pkcs8).fingerprint).toBe(EC_FINGERPRINT);
      expect(parser.parse(fixture('ec-p256.crt.pem'), withParameters).fingerprint).toBe(EC_FINGERPRINT);
    });
  });

  describe('rejects the certificate', () => {
    it.each([
      ['garbage text', 'this is not a certificate'],
      ['an empty string', ''],
      ['a private key', fixture('ec-p256.key.pem')],
    ])('when it is %s, on field certificate only', (_name, text) => {
      expect(fieldErrors(text, fixture('ec-p256.key.pem'))).toEqual({ certificate: [CERTIFICATE_MESSAGES.missing] });
    });

    it('when the PEM body is not base64', () => {
      const broken = '-----BEGIN CERTIFICATE-----\nnot*base64!\n-----END CERTIFICATE-----\n';

      expect(fieldErrors(broken, keys.privatePkcs8)).toEqual({ certificate: [CERTIFICATE_MESSAGES.unreadable] });
    });

    it('when the PEM body is base64 but not a certificate', () => {
      const notCertificate = `-----BEGIN CERTIFICATE-----\n${Buffer.from('hello, world').toString('base64')}\n-----END CERTIFICATE-----\n`;

      expect(fieldErrors(notCertificate, keys.privatePkcs8)).toEqual({ certificate: [CERTIFICATE_MESSAGES.unreadable] });
    });

    it('when a byte of the certificate is cut off', () => {
      const der = derOf(rsaPem);
      const truncated = `-----BEGIN CERTIFICATE-----\n${der.subarray(0, der.length - 1).toString('base64')}\n-----END CERTIFICATE-----\n`;

      expect(fieldErrors(truncated, keys.privatePkcs8)).toEqual({ certificate: [CERTIFICATE_MESSAGES.unreadable] });
    });

    it('when its public key is Ed448, naming the key type', () => {
      expect(fieldErrors(fixture('ed448.crt.pem'), fixture('ed448.key.pem')))
        .toEqual({ certificate: [CERTIFICATE_MESSAGES.unsupportedKey('ed448')] });
    });
  });

  describe('rejects the key', () => {
    it.each([
      ['ECDSA', 'ec-p256.crt.pem', 'other-ec-p256.key.pem'],
      ['Ed25519', 'ed25519.crt.pem', 'other-ed25519.key.pem'],
      ['ECDSA with an Ed25519 key', 'ec-p256.crt.pem', 'ed25519.key.pem'],
    ])('when it does not match the certificate (%s)', (_name, certificate, key) => {
      expect(fieldErrors(fixture(certificate), fixture(key)))
        .toEqual({ key: ['The private key does not match the certificate.'] });
    });

    it('when another RSA key is given for an RSA certificate', () => {
      expect(fieldErrors(rsaPem, rsaKeys().privatePkcs8)).toEqual({ key: [KEY_MESSAGES.mismatch] });
    });

    it('when an RSA key is given for an ECDSA certificate', () => {
      expect(fieldErrors(fixture('ec-p256.crt.pem'), keys.privatePkcs8)).toEqual({ key: [KEY_MESSAGES.mismatch] });
    });

    it.each([
      ['PKCS#8', 'pkcs8'],
      ['PKCS#1 with a Proc-Type header', 'pkcs1'],
    ] as const)('when it is encrypted (%s)', (_name, type) => {
      const encrypted = createPrivateKey(keys.privatePkcs8)
        .export({ type, format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }).toString();

      expect(fieldErrors(rsaPem, encrypted)).toEqual({ key: [KEY_MESSAGES.encrypted] });
    });

    it('when a public key is given instead', () => {
      expect(fieldErrors(rsaPem, keys.publicPem)).toEqual({ key: [KEY_MESSAGES.publicKey] });
    });

    it('when an RSA PUBLIC KEY (PKCS#1) is given instead', () => {
      const pkcs1Public = createPublicKey(keys.publicPem).export({ type: 'pkcs1', format: 'pem' }).toString();

      expect(fieldErrors(rsaPem, pkcs1Public)).toEqual({ key: [KEY_MESSAGES.publicKey] });
    });

    it('when the certificate is given as the key', () => {
      expect(fieldErrors(rsaPem, rsaPem)).toEqual({ key: [KEY_MESSAGES.certificate] });
    });

    it('when it is an OpenSSH private key', () => {
      const openSsh = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';

      expect(fieldErrors(rsaPem, openSsh)).toEqual({ key: [KEY_MESSAGES.openSsh] });
    });

    it('when it is garbage text', () => {
      expect(fieldErrors(rsaPem, 'not a key')).toEqual({ key: [KEY_MESSAGES.missing] });
    });

    it('when its body is damaged, without repeating any library message', () => {
      const damaged = '-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA\n-----END PRIVATE KEY-----\n';

      const errors = fieldErrors(rsaPem, damaged);

      expect(errors).toEqual({ key: [KEY_MESSAGES.unreadable] });
      expect(JSON.stringify(errors)).not.toMatch(/error:|routines|asn1|MIIB/i);
    });
  });

  it('reports both fields at once when certificate and key are both bad', () => {
    expect(fieldErrors('garbage', keys.publicPem)).toEqual({
      certificate: [CERTIFICATE_MESSAGES.missing],
      key: [KEY_MESSAGES.publicKey],
    });
  });
});
