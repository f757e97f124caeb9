import { createHash, createPublicKey } from 'node:crypto';
import { utils } from 'ssh2';
import { ValidationFailed, type ParsedPublicKey, type PublicKeyParser } from '@svc/core';
import { WireReader, mpintBits } from './wire';

const FIELD = 'public';
const MIN_RSA_BITS = 2048;
const SUPPORTED = 'ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 '
  + `or ssh-rsa of at least ${MIN_RSA_BITS} bits`;

interface EcdsaShape {
  curve: string;
  bits: number;
  /** Length of an uncompressed point: 0x04, then X and Y. */
  pointBytes: number;
}

const ECDSA: Readonly<Record<string, EcdsaShape>> = {
  'ecdsa-sha2-nistp256': { curve: 'nistp256', bits: 256, pointBytes: 65 },
  'ecdsa-sha2-nistp384': { curve: 'nistp384', bits: 384, pointBytes: 97 },
  'ecdsa-sha2-nistp521': { curve: 'nistp521', bits: 521, pointBytes: 133 },
};

const SUPPORTED_TYPES = new Set(['ssh-ed25519', 'ssh-rsa', ...Object.keys(ECDSA)]);

const PRIVATE_KEY_MARKER = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----|^PuTTY-User-Key-File-/;
const KEY_LINE = /^(\S+)[ \t]+(\S+)(?:[ \t]+(.*))?$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const PRINTABLE_TYPE = /^[\x21-\x7e]{1,64}$/;

const MESSAGES = {
  empty: 'Enter an SSH public key.',
  privateKey: 'This is a private key. Enter the public key instead (the contents of the .pub file).',
  oneLine: 'Enter exactly one public key, on a single line.',
  notOpenSsh: 'This is not an OpenSSH public key: expected "<type> <base64 key> [comment]".',
  dsa: `DSA keys (ssh-dss) are not supported. Use ${SUPPORTED}.`,
  certificate: 'SSH certificates are not supported. Enter the plain public key.',
  base64: 'The key data is not valid base64.',
  malformed: 'The key data is malformed.',
} as const;

function invalid(message: string): ValidationFailed {
  return ValidationFailed.field(FIELD, message);
}

/** Echoes user text in a message only when it is short and printable. */
function quoted(text: string): string {
  return PRINTABLE_TYPE.test(text) ? `"${text}"` : 'given';
}

function decodeBase64(text: string): Buffer | null {
  if (!BASE64.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  // Buffer.from skips what it cannot read; a lossless round trip proves the text was base64.
  // Missing padding is tolerated because some tools strip it.
  const unpadded = (value: string) => value.replace(/=+$/, '');
  return bytes.length > 0 && unpadded(bytes.toString('base64')) === unpadded(text) ? bytes : null;
}

function checkType(type: string): void {
  if (SUPPORTED_TYPES.has(type)) return;
  if (type === 'ssh-dss') throw invalid(MESSAGES.dsa);
  if (/-cert-v0[01]@openssh\.com$/.test(type)) throw invalid(MESSAGES.certificate);
  throw invalid(`Unsupported key type ${quoted(type)}. Use ${SUPPORTED}.`);
}

/** Walks the wire blob of a key of the given type and returns its size in bits. */
function readBlob(type: string, blob: Buffer): number {
  const reader = new WireReader(blob);
  const blobType = reader.readString()?.toString('latin1');
  if (blobType === undefined) throw invalid(MESSAGES.malformed);
  if (blobType !== type) {
    throw invalid(PRINTABLE_TYPE.test(blobType)
      ? `The key type "${type}" does not match the key data, which is "${blobType}".`
      : MESSAGES.malformed);
  }

  let bits: number | null = null;
  const ecdsa = ECDSA[type];
  if (type === 'ssh-ed25519') {
    const point = reader.readString();
    bits = point?.length === 32 ? 256 : null;
  } else if (type === 'ssh-rsa') {
    const exponent = reader.readString();
    const modulus = reader.readString();
    const exponentBits = exponent === null ? null : mpintBits(exponent);
    bits = modulus === null || exponentBits === null || exponentBits === 0 ? null : mpintBits(modulus);
  } else if (ecdsa !== undefined) {
    const curve = reader.readString()?.toString('latin1');
    const point = reader.readString();
    const wellFormed = curve === ecdsa.curve && point?.length === ecdsa.pointBytes && point[0] === 0x04;
    bits = wellFormed ? ecdsa.bits : null;
  }
  if (bits === null || !reader.atEnd()) throw invalid(MESSAGES.malformed);
  return bits;
}

/** Checks the key with ssh2 and node:crypto, which reject what the wire walk cannot see (e.g. an ECDSA point off its curve). */
function checkWithLibraries(type: string, blob: Buffer): void {
  const parsed = utils.parseKey(`${type} ${blob.toString('base64')}`);
  if (parsed instanceof Error) throw invalid(MESSAGES.malformed);
  if (parsed.isPrivateKey()) throw invalid(MESSAGES.privateKey);
  if (parsed.type !== type || !parsed.getPublicSSH().equals(blob)) throw invalid(MESSAGES.malformed);
  try {
    createPublicKey(parsed.getPublicPEM());
  } catch {
    throw invalid(MESSAGES.malformed);
  }
}

/** Parses one OpenSSH public key line with ssh2 and computes its OpenSSH SHA256 fingerprint. */
export class Ssh2PublicKeyParser implements PublicKeyParser {
  parse(text: string): ParsedPublicKey {
    const trimmed = text.trim();
    if (trimmed.length === 0) throw invalid(MESSAGES.empty);
    if (PRIVATE_KEY_MARKER.test(trimmed)) throw invalid(MESSAGES.privateKey);
    if (/[\r\n]/.test(trimmed)) throw invalid(MESSAGES.oneLine);

    const match = KEY_LINE.exec(trimmed);
    if (match === null) throw invalid(MESSAGES.notOpenSsh);
    const [, type = '', data = '', comment] = match;
    checkType(type);
    const blob = decodeBase64(data);
    if (blob === null) throw invalid(MESSAGES.base64);
    const bits = readBlob(type, blob);
    checkWithLibraries(type, blob);
    if (type === 'ssh-rsa' && bits < MIN_RSA_BITS) {
      throw invalid(`RSA keys must have at least ${MIN_RSA_BITS} bits; this key has ${bits} bits.`);
    }

    const digest = createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
    const base = `${type} ${blob.toString('base64')}`;
    return {
      type,
      bits,
      fingerprint: `SHA256:${digest}`,
      normalized: comment === undefined || comment === '' ? base : `${base} ${comment}`,
    };
  }
}
