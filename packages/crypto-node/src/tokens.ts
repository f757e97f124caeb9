import { hash as digest, randomBytes } from 'node:crypto';
import type { TokenGenerator } from '@svc/core';

/** API tokens of 20 random bytes in lowercase hex, stored as their SHA-256. */
export class RandomTokenGenerator implements TokenGenerator {
  generate(): string {
    return randomBytes(20).toString('hex');
  }

  // Tokens carry 160 random bits, so a fast unsalted hash is enough to make a leaked
  // table useless without slowing every authenticated request (one-shot: no Hash object).
  hash(token: string): string {
    return digest('sha256', token, 'hex');
  }
}
