import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { PasswordHasher } from '@svc/core';

/** scrypt cost parameters: CPU/memory cost `N` (a power of two), block size `r`, parallelism `p`. */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

const DEFAULT_COST: ScryptCost = { N: 16384, r: 8, p: 1 };
const SALT_BYTES = 16;
const HASH_BYTES = 32;
const PREFIX = 'scrypt';

// Upper bounds for parameters read back from a stored hash: a corrupted or hostile row must
// not make one login allocate gigabytes or spin for minutes.
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;
const MIN_HASH_BYTES = 16;
const MAX_HASH_BYTES = 128;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const DECIMAL = /^[1-9][0-9]{0,9}$/;

function isValidCost(cost: ScryptCost): boolean {
  const { N, r, p } = cost;
  const powerOfTwo = Number.isInteger(N) && N > 1 && (N & (N - 1)) === 0;
  return powerOfTwo && N <= MAX_N
    && Number.isInteger(r) && r >= 1 && r <= MAX_R
    && Number.isInteger(p) && p >= 1 && p <= MAX_P;
}

function decodeBase64(text: string): Buffer | null {
  if (!BASE64.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  // Buffer.from ignores stray characters, so insist on the round trip.
  return bytes.toString('base64') === text ? bytes : null;
}

function derive(password: string, salt: Buffer, length: number, cost: ScryptCost): Promise<Buffer> {
  // scrypt needs about 128 * r * (N + p) bytes; the default cap of 32 MiB would refuse
  // larger costs that are still within the bounds accepted above.
  const maxmem = 2 * 128 * cost.r * (cost.N + cost.p + 2);
  return new Promise((resolve, reject) => {
    // NFC makes the same password typed on systems that compose accents differently match.
    scrypt(password.normalize('NFC'), salt, length, { ...cost, maxmem }, (error, key) => {
      if (error) reject(error);
      else resolve(key);
    });
  });
}

interface StoredHash {
  cost: ScryptCost;
  salt: Buffer;
  hash: Buffer;
}

function parseStored(stored: string): StoredHash | null {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== PREFIX) return null;
  const [, n, r, p, saltText, hashText] = parts as [string, string, string, string, string, string];
  if (!DECIMAL.test(n) || !DECIMAL.test(r) || !DECIMAL.test(p)) return null;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  if (!isValidCost(cost)) return null;
  const salt = decodeBase64(saltText);
  const hash = decodeBase64(hashText);
  if (salt === null || hash === null) return null;
  if (hash.length < MIN_HASH_BYTES || hash.length > MAX_HASH_BYTES) return null;
  return { cost, salt, hash };
}

/**
 * Salted scrypt password hashing; stored hashes read `scrypt$<N>$<r>$<p>$<salt>$<hash>`
 * (base64), so the cost can be raised later without invalidating existing hashes.
 */
export class ScryptPasswordHasher implements PasswordHasher {
  private readonly cost: ScryptCost;

  constructor(cost: Partial<ScryptCost> = {}) {
    const merged = { ...DEFAULT_COST, ...cost };
    if (!isValidCost(merged)) {
      throw new RangeError(`Invalid scrypt cost N=${merged.N} r=${merged.r} p=${merged.p}`);
    }
    this.cost = merged;
  }

  async hash(password: string): Promise<string> {
    const salt = randomBytes(SALT_BYTES);
    const key = await derive(password, salt, HASH_BYTES, this.cost);
    const { N, r, p } = this.cost;
    return [PREFIX, N, r, p, salt.toString('base64'), key.toString('base64')].join('$');
  }

  async verify(password: string, hash: string): Promise<boolean> {
    const stored = parseStored(hash);
    if (stored === null) return false;
    try {
      const key = await derive(password, stored.salt, stored.hash.length, stored.cost);
      return timingSafeEqual(key, stored.hash);
    } catch {
      // A hash whose parameters this machine cannot honour is treated as not matching.
      return false;
    }
  }
}
