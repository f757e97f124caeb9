import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { md, pki } from 'node-forge';

const FIXTURES = join(__dirname, '..', '..', '..', 'certs-forge', 'test', 'fixtures');

/** A committed PEM fixture of the certificate adapter's tests. */
export function fixture(name: string): string {
  return readFileSync(join(FIXTURES, name), 'utf8');
}

/** A certificate and the private key that matches it, as PEM. */
export interface CertificatePair {
  certificate: string;
  key: string;
}

/** ECDSA P-256 leaf `CN=ec.example.com`, SAN ec.example.com and www.ec.example.com. */
export const ecdsaPair = (): CertificatePair => ({ certificate: fixture('ec-p256.crt.pem'), key: fixture('ec-p256.key.pem') });
/** Ed25519 leaf `CN=ed.example.com`. */
export const ed25519Pair = (): CertificatePair => ({ certificate: fixture('ed25519.crt.pem'), key: fixture('ed25519.key.pem') });

/** What a generated RSA certificate contains. */
export interface RsaCertificateOptions {
  commonName?: string;
  dnsNames?: string[];
  /** Days of validity from yesterday on; default 365. */
  days?: number;
}

let serial = 0;

/**
 * A self-signed RSA 2048 certificate and its key, generated and signed with node-forge
 * (forge uses the platform's key generation when it can, so this stays fast).
 */
export function rsaPair(options: RsaCertificateOptions = {}): CertificatePair {
  const keys = pki.rsa.generateKeyPair({ bits: 2048 });
  const certificate = pki.createCertificate();
  certificate.publicKey = keys.publicKey;
  serial += 1;
  certificate.serialNumber = `0${serial.toString(16)}`;
  const from = new Date(Date.now() - 24 * 3600 * 1000);
  certificate.validity.notBefore = from;
  certificate.validity.notAfter = new Date(from.getTime() + (options.days ?? 365) * 24 * 3600 * 1000);
  const subject = [{ shortName: 'O', value: 'Example' }];
  if (options.commonName !== undefined) subject.push({ shortName: 'CN', value: options.commonName });
  certificate.setSubject(subject);
  certificate.setIssuer(subject);
  const extensions: object[] = [{ name: 'basicConstraints', cA: false }];
  const dnsNames = options.dnsNames ?? [];
  if (dnsNames.length > 0) extensions.push({ name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) });
  certificate.setExtensions(extensions);
  certificate.sign(keys.privateKey, md.sha256.create());
  return { certificate: pki.certificateToPem(certificate), key: pki.privateKeyToPem(keys.privateKey) };
}
