import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { SecretBox } from '@svc/core';

/** Salt of the key derivation; changing it makes every sealed value unreadable. */
export const SECRET_BOX_KDF_SALT = 'svc-controller secret-box';
/** Context of the key derivation; names the format version and the cipher. */
export const SECRET_BOX_KDF_INFO = 'v1 aes-256-gcm';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BASE64 = /^(?:[A-Za-z0-9+/]+={0,2})?$/;

function decodeBase64(text: string): Buffer | null {
  if (!BASE64.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/**
 * AES-256-GCM encryption of secrets at rest, keyed by HKDF-SHA256 of the server secret;
 * sealed values read `v1:<iv>:<tag>:<ciphertext>` in base64.
 */
export class AesGcmSecretBox implements SecretBox {
  private readonly key: Buffer;

  // HKDF, not a password hash: the server secret is expected to be long and random
  // (see generateSecretKey), and the derivation runs once per process.
  constructor(secret: string) {
    if (secret.length === 0) throw new Error('The secret of a SecretBox must not be empty');
    this.key = Buffer.from(hkdfSync('sha256', secret, SECRET_BOX_KDF_SALT, SECRET_BOX_KDF_INFO, 32));
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    // Binding the version as associated data stops a value from being replayed under another format.
    cipher.setAAD(Buffer.from(VERSION));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, iv.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const parts = sealed.split(':');
    if (parts.length !== 4 || parts[0] !== VERSION) {
      throw new Error('Cannot open sealed value: unknown format');
    }
    const iv = decodeBase64(parts[1] ?? '');
    const tag = decodeBase64(parts[2] ?? '');
    const ciphertext = decodeBase64(parts[3] ?? '');
    if (iv === null || tag === null || ciphertext === null || iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
      throw new Error('Cannot open sealed value: unknown format');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(VERSION));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new Error('Cannot open sealed value: wrong secret key or tampered data');
    }
  }
}
