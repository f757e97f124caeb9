import { ValidationFailed } from '../errors';
import type { CertificateParser, ParsedCertificate } from '../ports/services';
import { fakeDigest, hex } from './encoding';

/*
 * The fake PEM format. A certificate is a block of `FIELD=value` lines, optionally
 * wrapped in `-----BEGIN FAKE CERTIFICATE-----` / `-----END FAKE CERTIFICATE-----`:
 *
 *   CN=www.example.com                      optional subject common name
 *   SAN=www.example.com,example.com         optional, comma-separated DNS names
 *   ISSUER=CN=Fake CA                       optional, default `CN=Fake CA`
 *   STARTS=2026-11-01T00:00:00.000Z         optional ISO instant, default FAKE_CERT_STARTS
 *   EXPIRES=2027-11-21T10:00:00.000Z        required ISO instant
 *
 * Its private key is the single line `KEY-FOR:<subject>`, optionally wrapped in
 * `-----BEGIN FAKE PRIVATE KEY-----` / `-----END FAKE PRIVATE KEY-----`, where the
 * subject is the CN, or the first SAN when there is no CN. A key for another subject
 * "does not match" the certificate.
 */

const CERT_BEGIN = '-----BEGIN FAKE CERTIFICATE-----';
const CERT_END = '-----END FAKE CERTIFICATE-----';
const KEY_BEGIN = '-----BEGIN FAKE PRIVATE KEY-----';
const KEY_END = '-----END FAKE PRIVATE KEY-----';
const FIELDS = ['CN', 'SAN', 'ISSUER', 'STARTS', 'EXPIRES'] as const;
type Field = (typeof FIELDS)[number];

/** Default validity start of fake certificates. */
export const FAKE_CERT_STARTS = '2026-11-01T00:00:00.000Z';
/** Default expiry of fake certificates: a year after FAKE_NOW. */
export const FAKE_CERT_EXPIRES = '2027-11-21T10:00:00.000Z';
/** Default issuer of fake certificates. */
export const FAKE_CERT_ISSUER = 'CN=Fake CA';

/** What a fake certificate says; every field has a default. */
export interface FakeCertificateFields {
  /** The subject CN; null for a certificate with SANs only. Default `www.example.com`. */
  cn?: string | null;
  /** Default: `[cn]` when there is a CN, else `[]`. */
  san?: string[];
  issuer?: string;
  starts?: Date | string;
  expires?: Date | string;
}

/** Parses the fake PEM format documented in this file and checks that the key matches. */
export class FakeCertificateParser implements CertificateParser {
  /** @throws ValidationFailed on `certificate` when it is not in the fake format, on `key` when the key is unreadable or belongs to another subject. */
  parse(certificatePem: string, keyPem: string): ParsedCertificate {
    const fields = readCertificate(certificatePem);
    const commonName = fields.CN ?? null;
    const san = fields.SAN === undefined ? [] : fields.SAN.split(',').map((s) => s.trim()).filter((s) => s !== '');
    const issuer = fields.ISSUER ?? FAKE_CERT_ISSUER;
    const starts = readInstant(fields.STARTS ?? FAKE_CERT_STARTS);
    const expires = readInstant(fields.EXPIRES as string);
    const subject = commonName ?? san[0] ?? '';
    const keySubject = readKey(keyPem);
    if (keySubject !== subject) {
      throw ValidationFailed.field('key', 'The private key does not match the certificate.');
    }
    const pem = fakeCertificatePem({ cn: commonName, san, issuer, starts, expires });
    return {
      commonName,
      san,
      issuer,
      fingerprint: fakeCertificateFingerprint(pem),
      starts,
      expires,
      pem,
    };
  }
}

function readCertificate(text: string): Partial<Record<Field, string>> {
  const lines = unwrap(text, CERT_BEGIN, CERT_END);
  if (lines === null || lines.length === 0) throw invalidCertificate();
  const fields: Partial<Record<Field, string>> = {};
  for (const line of lines) {
    const eq = line.indexOf('=');
    const name = line.slice(0, eq) as Field;
    if (eq < 0 || !FIELDS.includes(name) || fields[name] !== undefined) throw invalidCertificate();
    fields[name] = line.slice(eq + 1).trim();
  }
  if (fields.EXPIRES === undefined) throw invalidCertificate();
  if (Number.isNaN(Date.parse(fields.EXPIRES)) || (fields.STARTS !== undefined && Number.isNaN(Date.parse(fields.STARTS)))) {
    throw invalidCertificate();
  }
  return fields;
}

function readKey(text: string): string {
  const lines = unwrap(text, KEY_BEGIN, KEY_END);
  const line = lines?.length === 1 ? lines[0] : undefined;
  if (line === undefined || !line.startsWith('KEY-FOR:')) {
    throw ValidationFailed.field('key', 'Could not read the private key.');
  }
  return line.slice('KEY-FOR:'.length).trim();
}

/** The non-blank lines inside the armour (which is optional), or null when the armour is unbalanced. */
function unwrap(text: string, begin: string, end: string): string[] | null {
  let lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  const hasBegin = lines[0] === begin;
  const hasEnd = lines[lines.length - 1] === end;
  if (hasBegin !== hasEnd) return null;
  if (hasBegin) lines = lines.slice(1, -1);
  return lines;
}

function readInstant(value: string | Date): Date {
  return new Date(typeof value === 'string' ? Date.parse(value) : value.getTime());
}

function invalidCertificate(): ValidationFailed {
  return ValidationFailed.field('certificate', 'Could not read the certificate.');
}

/** A certificate in the fake PEM format, with the armour. */
export function fakeCertificatePem(fields: FakeCertificateFields = {}): string {
  const cn = fields.cn === undefined ? 'www.example.com' : fields.cn;
  const san = fields.san ?? (cn === null ? [] : [cn]);
  const lines = [CERT_BEGIN];
  if (cn !== null) lines.push(`CN=${cn}`);
  if (san.length > 0) lines.push(`SAN=${san.join(',')}`);
  lines.push(`ISSUER=${fields.issuer ?? FAKE_CERT_ISSUER}`);
  lines.push(`STARTS=${readInstant(fields.starts ?? FAKE_CERT_STARTS).toISOString()}`);
  lines.push(`EXPIRES=${readInstant(fields.expires ?? FAKE_CERT_EXPIRES).toISOString()}`);
  lines.push(CERT_END);
  return lines.join('\n') + '\n';
}

/** The private key that matches a fake certificate whose subject (CN, else first SAN) is `subject`. */
export function fakePrivateKeyPem(subject: string): string {
  return `${KEY_BEGIN}\nKEY-FOR:${subject}\n${KEY_END}\n`;
}

/** The fingerprint FakeCertificateParser gives a certificate: colon-separated uppercase hex, like a SHA-256 fingerprint. */
export function fakeCertificateFingerprint(pem: string): string {
  return (hex(fakeDigest(pem)).toUpperCase().match(/../g) as string[]).join(':');
}
