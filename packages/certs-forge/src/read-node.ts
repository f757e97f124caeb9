import type { X509Certificate } from 'node:crypto';
import type { ParsedCertificate } from '@svc/core';
import { completeFields } from './fields';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const OPENSSL_TIME = /^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))? (\d{4}) GMT$/;

/** Parses the time format node:crypto reports validity in (`Nov  1 08:33:04 2026 GMT`). */
export function parseOpenSslTime(text: string): Date {
  const match = OPENSSL_TIME.exec(text);
  const month = MONTHS.indexOf(match?.[1] ?? '');
  if (match === null || month < 0) throw new Error(`Unrecognised certificate time: ${text}`);
  const [, , day, hours, minutes, seconds, fraction, year] = match;
  const millis = fraction === undefined ? 0 : Math.floor(Number(`0.${fraction}`) * 1000);
  return new Date(Date.UTC(Number(year), month, Number(day), Number(hours), Number(minutes), Number(seconds), millis));
}

/**
 * The DNS names of node:crypto's `subjectAltName` text (`DNS:a, DNS:b, IP Address:...`).
 * Node quotes a value as a JSON string when it holds a separator or an unusual character,
 * so a hostile name cannot forge an extra entry.
 */
export function parseSubjectAltName(text: string | undefined): string[] {
  const names: string[] = [];
  if (text === undefined || text === '') return names;
  let index = 0;
  while (index < text.length) {
    const colon = text.indexOf(':', index);
    if (colon < 0) break;
    const kind = text.slice(index, colon);
    let value: string;
    let end: number;
    if (text[colon + 1] === '"') {
      end = colon + 2;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      end += 1;
      value = JSON.parse(text.slice(colon + 1, end)) as string;
    } else {
      const separator = text.indexOf(', ', colon);
      end = separator < 0 ? text.length : separator;
      value = text.slice(colon + 1, end);
    }
    if (kind === 'DNS') names.push(value);
    index = end + 2;
  }
  return names;
}

/** Reads a certificate with node:crypto; used for the ECDSA and Ed25519 certificates forge cannot read. */
export function readWithNodeCrypto(certificate: X509Certificate): ParsedCertificate {
  return completeFields(certificate.raw, {
    san: parseSubjectAltName(certificate.subjectAltName),
    starts: parseOpenSslTime(certificate.validFrom),
    expires: parseOpenSslTime(certificate.validTo),
  });
}
