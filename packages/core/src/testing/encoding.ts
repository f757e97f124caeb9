/*
 * Small byte helpers for the fakes. The core ships without dependencies and must run
 * outside Node as well, so it cannot lean on Buffer; these cover exactly what the fakes
 * need and nothing more.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** The UTF-8 bytes of a string. */
export function utf8Encode(text: string): number[] {
  const bytes: number[] = [];
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (code < 0x80) {
      bytes.push(code);
    } else if (code < 0x800) {
      bytes.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    } else {
      bytes.push(
        0xf0 | (code >> 18),
        0x80 | ((code >> 12) & 0x3f),
        0x80 | ((code >> 6) & 0x3f),
        0x80 | (code & 0x3f),
      );
    }
  }
  return bytes;
}

/** Decodes UTF-8 bytes produced by utf8Encode. */
export function utf8Decode(bytes: readonly number[]): string {
  let text = '';
  let i = 0;
  const at = (index: number): number => {
    const byte = bytes[index];
    if (byte === undefined) throw new Error('Truncated UTF-8 sequence');
    return byte & 0x3f;
  };
  while (i < bytes.length) {
    const first = bytes[i] as number;
    let code: number;
    if (first < 0x80) {
      code = first;
      i += 1;
    } else if (first >= 0xf0) {
      code = ((first & 0x07) << 18) | (at(i + 1) << 12) | (at(i + 2) << 6) | at(i + 3);
      i += 4;
    } else if (first >= 0xe0) {
      code = ((first & 0x0f) << 12) | (at(i + 1) << 6) | at(i + 2);
      i += 3;
    } else {
      code = ((first & 0x1f) << 6) | at(i + 1);
      i += 2;
    }
    text += String.fromCodePoint(code);
  }
  return text;
}

/** Standard base64 with padding. */
export function base64Encode(bytes: readonly number[]): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i] as number;
    const b = bytes[i + 1];
    const c = bytes[i + 2];
    const n = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    out += ALPHABET[(n >> 18) & 63];
    out += ALPHABET[(n >> 12) & 63];
    out += b === undefined ? '=' : ALPHABET[(n >> 6) & 63];
    out += c === undefined ? '=' : ALPHABET[n & 63];
  }
  return out;
}

/** True when `text` is well-formed padded base64. */
export function isBase64(text: string): boolean {
  return text.length > 0 && text.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(text);
}

/**
 * Decodes padded base64.
 * @throws Error when the text is not well-formed base64.
 */
export function base64Decode(text: string): number[] {
  if (!isBase64(text)) throw new Error('Not base64');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i += 4) {
    const quad = text.slice(i, i + 4);
    const values = [...quad].map((ch) => (ch === '=' ? 0 : ALPHABET.indexOf(ch)));
    const n = ((values[0] as number) << 18) | ((values[1] as number) << 12) | ((values[2] as number) << 6) | (values[3] as number);
    bytes.push((n >> 16) & 0xff);
    if (quad[2] !== '=') bytes.push((n >> 8) & 0xff);
    if (quad[3] !== '=') bytes.push(n & 0xff);
  }
  return bytes;
}

/**
 * A deterministic 32-byte digest of a string. Not cryptographic: it only has to look like
 * a SHA-256 and differ for different inputs, so eight seeded FNV-1a passes suffice.
 */
export function fakeDigest(text: string): number[] {
  const bytes = utf8Encode(text);
  const out: number[] = [];
  for (let seed = 0; seed < 8; seed++) {
    let hash = (0x811c9dc5 ^ Math.imul(seed + 1, 0x9e3779b1)) >>> 0;
    for (const byte of bytes) {
      hash ^= byte;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    // A final avalanche so that inputs differing only in their last byte still spread.
    hash ^= hash >>> 15;
    hash = Math.imul(hash, 0x2c1b3c6d) >>> 0;
    hash ^= hash >>> 12;
    out.push((hash >>> 24) & 0xff, (hash >>> 16) & 0xff, (hash >>> 8) & 0xff, hash & 0xff);
  }
  return out;
}

/** Lowercase hex of bytes. */
export function hex(bytes: readonly number[]): string {
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
}
