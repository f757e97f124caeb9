import { generateKeyPairSync } from 'node:crypto';
import { asn1, md, pki } from 'node-forge';

/** An RSA key pair as PEM, made with node:crypto because forge's own generator is slow. */
export interface RsaKeys {
  privatePkcs8: string;
  privatePkcs1: string;
  publicPem: string;
}

/** A fresh 2048-bit RSA key pair. */
export function rsaKeys(): RsaKeys {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privatePkcs8: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    privatePkcs1: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** One name attribute; values are written as UTF8String so any character is allowed. */
export interface NameAttribute {
  shortName: string;
  value: string;
}

/** What a test certificate should contain. */
export interface CertificateOptions {
  keys: RsaKeys;
  subject: NameAttribute[];
  dnsNames: string[];
  notBefore: Date;
  notAfter: Date;
}

const UTF8 = asn1.Type.UTF8 as unknown as asn1.Class;

/** A self-signed RSA certificate built and signed with node-forge, as PEM. */
export function selfSignedRsaCertificate(options: CertificateOptions): string {
  const certificate = pki.createCertificate();
  certificate.publicKey = pki.publicKeyFromPem(options.keys.publicPem);
  certificate.serialNumber = '0a1b2c';
  certificate.validity.notBefore = options.notBefore;
  certificate.validity.notAfter = options.notAfter;
  const name = options.subject.map((attribute) => ({ ...attribute, valueTagClass: UTF8 }));
  certificate.setSubject(name);
  certificate.setIssuer(name);
  const extensions: object[] = [{ name: 'basicConstraints', cA: false }];
  if (options.dnsNames.length > 0) {
    extensions.push({
      name: 'subjectAltName',
      // An IP address among the names checks that only DNS names are reported.
      altNames: [
        ...options.dnsNames.map((value) => ({ type: 2, value })),
        { type: 7, ip: '192.0.2.1' },
      ],
    });
  }
  certificate.setExtensions(extensions);
  certificate.sign(pki.privateKeyFromPem(options.keys.privatePkcs8), md.sha256.create());
  return pki.certificateToPem(certificate);
}
