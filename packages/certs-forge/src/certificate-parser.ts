import { X509Certificate, type KeyObject } from 'node:crypto';
import {
  ValidationFailed, type CertificateParser, type FieldErrors, type ParsedCertificate,
} from '@svc/core';
import { blockBytes, pemBlocks } from './pem';
import { KEY_MESSAGES, readPrivateKey } from './private-key';
import { readWithForge } from './read-forge';
import { readWithNodeCrypto } from './read-node';

/** Messages for field `certificate`. */
export const CERTIFICATE_MESSAGES = {
  missing: 'No certificate found: expected a PEM certificate starting with "-----BEGIN CERTIFICATE-----".',
  unreadable: 'The certificate could not be read: it is not a valid X.509 certificate.',
  unsupportedKey: (type: string) => `Certificates with ${type} public keys are not supported. Use RSA, ECDSA or Ed25519.`,
} as const;

/** Public key types that forge cannot read and node:crypto reads instead. */
const NODE_KEY_TYPES = new Set(['ec', 'ed25519']);

interface ReadCertificate {
  fields: ParsedCertificate;
  x509: X509Certificate;
}

function loadX509(der: Buffer): X509Certificate | null {
  try {
    return new X509Certificate(der);
  } catch {
    return null;
  }
}

function readCertificate(text: string): ReadCertificate | { problem: string } {
  const block = pemBlocks(text).find((candidate) => candidate.label === 'CERTIFICATE');
  if (block === undefined) return { problem: CERTIFICATE_MESSAGES.missing };
  const der = blockBytes(block);
  if (der === null) return { problem: CERTIFICATE_MESSAGES.unreadable };
  try {
    // node:crypto is needed on both paths: it checks that the private key matches.
    const x509 = loadX509(der);
    if (x509 === null) return { problem: CERTIFICATE_MESSAGES.unreadable };
    const fromForge = readWithForge(der);
    if (fromForge !== null) return { fields: fromForge, x509 };
    const keyType = x509.publicKey.asymmetricKeyType ?? 'unknown';
    if (NODE_KEY_TYPES.has(keyType)) return { fields: readWithNodeCrypto(x509), x509 };
    // forge reads every RSA certificate node:crypto reads, so an RSA one here is damaged.
    if (keyType === 'rsa') return { problem: CERTIFICATE_MESSAGES.unreadable };
    return { problem: CERTIFICATE_MESSAGES.unsupportedKey(keyType) };
  } catch {
    // The readers throw on malformed structures deep inside the DER: the input's fault.
    return { problem: CERTIFICATE_MESSAGES.unreadable };
  }
}

function matches(x509: X509Certificate, key: KeyObject): boolean {
  try {
    return x509.checkPrivateKey(key);
  } catch {
    return false;
  }
}

/**
 * Parses PEM certificates with node-forge, falling back to node:crypto for the ECDSA and
 * Ed25519 certificates forge cannot read, and checks the private key with node:crypto.
 */
export class ForgeCertificateParser implements CertificateParser {
  parse(certificatePem: string, keyPem: string): ParsedCertificate {
    const certificate = readCertificate(certificatePem);
    const key = readPrivateKey(keyPem);
    const errors: FieldErrors = {};
    if ('problem' in certificate) errors.certificate = [certificate.problem];
    if ('problem' in key) errors.key = [key.problem];
    else if (!('problem' in certificate) && !matches(certificate.x509, key.key)) errors.key = [KEY_MESSAGES.mismatch];

    if ('problem' in certificate || Object.keys(errors).length > 0) throw new ValidationFailed(errors);
    return certificate.fields;
  }
}
