import { pki } from 'node-forge';
import type { ParsedCertificate } from '@svc/core';
import { completeFields } from './fields';
import { certificatePem } from './pem';

const DNS_NAME = 2;

interface AltName {
  type: number;
  value?: string;
}

/**
 * Reads a certificate with node-forge; null when forge cannot, which is the case for
 * every certificate whose public key is not RSA.
 */
export function readWithForge(der: Buffer): ParsedCertificate | null {
  let certificate: pki.Certificate;
  try {
    certificate = pki.certificateFromPem(certificatePem(der));
  } catch {
    return null;
  }
  const extension = certificate.getExtension('subjectAltName') as { altNames?: AltName[] } | undefined;
  const san = (extension?.altNames ?? [])
    .filter((name) => name.type === DNS_NAME && typeof name.value === 'string')
    .map((name) => name.value as string);
  return completeFields(der, {
    san,
    starts: certificate.validity.notBefore,
    expires: certificate.validity.notAfter,
  });
}
