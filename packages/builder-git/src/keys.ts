import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { utils } from 'ssh2';

/** The OpenSSH fingerprint of a public key blob: `SHA256:` and the unpadded base64 of its SHA-256. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** An SSH host key: the private key for the server, the fingerprint for its operators. */
export interface HostKey {
  privateKey: string;
  fingerprint: string;
}

function parse(text: string, path: string): HostKey {
  const parsed = utils.parseKey(text);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key === undefined || key instanceof Error || !key.isPrivateKey()) {
    throw new Error(`${path} is not an SSH private key: remove it to have a new host key generated`);
  }
  return { privateKey: text, fingerprint: fingerprintOf(key.getPublicSSH()) };
}

/**
 * A new ed25519 private key in OpenSSH format. ssh2's generator now and then writes a key that
 * its own parser calls malformed (a few in a thousand): such a key is thrown away.
 */
function generateHostKey(): string {
  for (let attempt = 0; ; attempt++) {
    const generated = utils.generateKeyPairSync('ed25519', { comment: 'svc git host key' }).private;
    const parsed = utils.parseKey(generated);
    const key = Array.isArray(parsed) ? parsed[0] : parsed;
    if (key !== undefined && !(key instanceof Error) && key.isPrivateKey()) return generated;
    if (attempt >= 20) throw new Error('could not generate a readable ed25519 host key');
  }
}

/**
 * Reads the server's SSH host key from `path`, generating an ed25519 key there (mode 0600)
 * the first time, so that clients see the same host key across restarts.
 * @throws Error when the file exists but holds no private key.
 */
export function loadOrCreateHostKey(path: string): HostKey {
  try {
    return parse(readFileSync(path, 'utf8'), path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const generated = generateHostKey();
  try {
    // `wx`: when two processes start at once, the second reads the first one's key.
    writeFileSync(path, generated, { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return parse(readFileSync(path, 'utf8'), path);
  }
  return parse(generated, path);
}
