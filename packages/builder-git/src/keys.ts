import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { utils, type ParsedKey } from 'ssh2';

/** The OpenSSH fingerprint of a public key blob: `SHA256:` and the unpadded base64 of its SHA-256. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** An SSH host key: the private key for the server, the fingerprint for its operators. */
export interface HostKey {
  privateKey: string;
  fingerprint: string;
}

/** The first key ssh2 reads in `text`, or null when it reads none. */
function keyOf(text: string): ParsedKey | null {
  const parsed = utils.parseKey(text);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  return key === undefined || key instanceof Error ? null : key;
}

function parse(text: string, path: string): HostKey {
  const key = keyOf(text);
  if (key === null || !key.isPrivateKey()) {
    throw new Error(`${path} is not an SSH private key: remove it to have a new host key generated`);
  }
  return { privateKey: text, fingerprint: fingerprintOf(key.getPublicSSH()) };
}

/** An ed25519 key pair in OpenSSH formats. */
export interface Ed25519Pair {
  /** The private key, `-----BEGIN OPENSSH PRIVATE KEY-----`, unencrypted. */
  private: string;
  /** The public key line: `ssh-ed25519 <base64> [comment]`. */
  public: string;
}

const ATTEMPTS = 20;

function readable(text: string, wantPrivate: boolean): boolean {
  return keyOf(text)?.isPrivateKey() === wantPrivate;
}

/**
 * A new ed25519 key pair. ssh2's generator drops the leading zero bytes of the public point, so
 * about one key in 256 comes out 31 bytes long and unreadable (ssh2 issue 1390): such a pair
 * is thrown away and another generated.
 * @throws Error when no readable pair came in a row of attempts (never seen: each fails with p = 1/256).
 */
export function generateEd25519Pair(comment?: string): Ed25519Pair {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const pair = utils.generateKeyPairSync('ed25519', comment === undefined ? undefined : { comment });
    if (readable(pair.private, true) && readable(pair.public, false)) return { private: pair.private, public: pair.public };
  }
  throw new Error(`could not generate a readable ed25519 key pair in ${ATTEMPTS} attempts`);
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
  const generated = generateEd25519Pair('svc git host key').private;
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
