import { ValidationFailed } from '../errors';
import type { ParsedPublicKey, PublicKeyParser } from '../ports/services';
import { base64Encode, fakeDigest, isBase64, utf8Encode } from './encoding';

const KEY_TYPE = 'ssh-ed25519';

/**
 * Accepts `ssh-ed25519 <base64> [comment]` and nothing else. The fingerprint is
 * `SHA256:` followed by 43 characters derived deterministically from the base64 part
 * (a stand-in digest, not the real SHA-256 of the key blob), so the same material always
 * has the same fingerprint and different material a different one.
 */
export class FakePublicKeyParser implements PublicKeyParser {
  /** @throws ValidationFailed on field `public` for anything but the accepted shape. */
  parse(text: string): ParsedPublicKey {
    const trimmed = text.trim();
    if (trimmed === '' || /[\r\n]/.test(trimmed)) {
      throw ValidationFailed.field('public', 'Key is not a valid OpenSSH public key.');
    }
    const [type, material, ...comment] = trimmed.split(/[ \t]+/);
    if (type !== KEY_TYPE) {
      throw ValidationFailed.field('public', `Key type ${type ?? ''} is not supported.`);
    }
    if (material === undefined || !isBase64(material)) {
      throw ValidationFailed.field('public', 'Key is not a valid OpenSSH public key.');
    }
    const normalizedComment = comment.join(' ');
    return {
      type: KEY_TYPE,
      bits: 256,
      fingerprint: fakeFingerprint(material),
      normalized: normalizedComment === '' ? `${KEY_TYPE} ${material}` : `${KEY_TYPE} ${material} ${normalizedComment}`,
    };
  }
}

/** The fingerprint FakePublicKeyParser gives to a key's base64 part. */
export function fakeFingerprint(material: string): string {
  return 'SHA256:' + base64Encode(fakeDigest(material)).replace(/=+$/, '');
}

/**
 * A well-formed ed25519 public key line whose material is derived from `seed`: different
 * seeds give different keys, the same seed the same key. The blob has the real OpenSSH
 * layout, so real parsers accept it too.
 */
export function fakePublicKey(seed: string, comment?: string): string {
  const name = utf8Encode(KEY_TYPE);
  const blob = [0, 0, 0, name.length, ...name, 0, 0, 0, 32, ...fakeDigest(`key:${seed}`)];
  const line = `${KEY_TYPE} ${base64Encode(blob)}`;
  return comment === undefined ? line : `${line} ${comment}`;
}
