import { createPrivateKey, type KeyObject } from 'node:crypto';
import { pemBlocks } from './pem';

/** PKCS#8, PKCS#1 (RSA) and SEC1 (EC): the unencrypted PEM private keys accepted. */
const ACCEPTED_LABELS = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY']);

/** Messages for field `key`; none repeats library text, which could quote key material. */
export const KEY_MESSAGES = {
  missing: 'No private key found: expected a PEM private key (PKCS#8, PKCS#1 or SEC1), '
    + 'starting with "-----BEGIN PRIVATE KEY-----" or similar.',
  encrypted: 'The private key is encrypted. Remove its passphrase and send it again.',
  publicKey: 'This is a public key. The private key is required.',
  certificate: 'This is a certificate. The private key is required.',
  openSsh: 'OpenSSH private keys are not supported. Convert the key to PEM (PKCS#8) first.',
  unsupported: 'This kind of private key is not supported. Use a PEM private key (PKCS#8, PKCS#1 or SEC1).',
  unreadable: 'The private key could not be read.',
  mismatch: 'The private key does not match the certificate.',
} as const;

/** A private key, or the message explaining why the text is not one. */
export type PrivateKeyResult = { key: KeyObject } | { problem: string };

/** Reads the first PEM private key of the text; encrypted and public keys are refused. */
export function readPrivateKey(text: string): PrivateKeyResult {
  const blocks = pemBlocks(text);
  const privateBlock = blocks.find((block) => block.label.endsWith('PRIVATE KEY'));
  if (privateBlock === undefined) {
    if (blocks.some((block) => block.label.endsWith('PUBLIC KEY'))) return { problem: KEY_MESSAGES.publicKey };
    if (blocks.some((block) => block.label.endsWith('CERTIFICATE'))) return { problem: KEY_MESSAGES.certificate };
    return { problem: KEY_MESSAGES.missing };
  }
  // PKCS#8 encryption has its own label; legacy OpenSSL encryption adds a Proc-Type header.
  if (privateBlock.label === 'ENCRYPTED PRIVATE KEY' || /Proc-Type:\s*4,\s*ENCRYPTED/i.test(privateBlock.body)) {
    return { problem: KEY_MESSAGES.encrypted };
  }
  if (privateBlock.label === 'OPENSSH PRIVATE KEY') return { problem: KEY_MESSAGES.openSsh };
  if (!ACCEPTED_LABELS.has(privateBlock.label)) return { problem: KEY_MESSAGES.unsupported };
  try {
    // Only the key block is handed over, so parameters or certificates around it do not matter.
    return { key: createPrivateKey({ key: privateBlock.text, format: 'pem' }) };
  } catch {
    return { problem: KEY_MESSAGES.unreadable };
  }
}
