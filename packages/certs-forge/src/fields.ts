import { createHash } from 'node:crypto';
import type { ParsedCertificate } from '@svc/core';
import { commonName, formatName, readCertificateNames } from './names';
import { certificatePem } from './pem';

/** What either reader extracts itself; the rest is computed from the DER alike. */
export interface ReaderFields {
  san: string[];
  starts: Date;
  expires: Date;
}

/** Completes a reader's fields with what is computed from the DER the same way on both paths. */
export function completeFields(der: Buffer, own: ReaderFields): ParsedCertificate {
  const names = readCertificateNames(der);
  const digest = createHash('sha256').update(der).digest('hex').toUpperCase();
  return {
    commonName: commonName(names.subject),
    san: own.san,
    issuer: formatName(names.issuer),
    fingerprint: digest.match(/../g)?.join(':') ?? '',
    starts: own.starts,
    expires: own.expires,
    pem: certificatePem(der),
  };
}
