import { generateKeyPairSync } from 'node:crypto';

/** SSH wire encoding: a uint32 length, then the bytes. */
function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** SSH mpint: big-endian, with a leading zero byte when the high bit is set. */
function mpint(bytes: Buffer): Buffer {
  let trimmed = bytes;
  while (trimmed.length > 1 && trimmed[0] === 0) trimmed = trimmed.subarray(1);
  return sshString((trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

const fromBase64Url = (value: string | undefined): Buffer => Buffer.from(value ?? '', 'base64url');

function line(type: string, blob: Buffer, comment: string): string {
  return `${type} ${blob.toString('base64')} ${comment}`;
}

/** A fresh OpenSSH `ssh-ed25519` public key line. */
export function ed25519PublicKey(comment = 'test@example.com'): string {
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
  return line('ssh-ed25519', Buffer.concat([sshString('ssh-ed25519'), sshString(fromBase64Url(jwk.x))]), comment);
}

/** A fresh OpenSSH `ssh-rsa` public key line of the given size. */
export function rsaPublicKey(bits = 2048, comment = 'test@example.com'): string {
  const jwk = generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ format: 'jwk' });
  return line('ssh-rsa', Buffer.concat([sshString('ssh-rsa'), mpint(fromBase64Url(jwk.e)), mpint(fromBase64Url(jwk.n))]), comment);
}

/** A fresh OpenSSH `ecdsa-sha2-nistp256` public key line. */
export function ecdsaPublicKey(comment = 'test@example.com'): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), fromBase64Url(jwk.x), fromBase64Url(jwk.y)]);
  return line(
    'ecdsa-sha2-nistp256',
    Buffer.concat([sshString('ecdsa-sha2-nistp256'), sshString('nistp256'), sshString(point)]),
    comment,
  );
}

/** A syntactically well-formed `ssh-dss` key line (DSA keys must be refused). */
export function dsaPublicKey(): string {
  const part = (n: number, fill: number) => mpint(Buffer.alloc(n, fill));
  return line('ssh-dss', Buffer.concat([sshString('ssh-dss'), part(128, 0x7f), part(20, 0x3f), part(128, 0x2f), part(128, 0x1f)]), 'dsa@example.com');
}
