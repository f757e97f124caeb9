import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Clock, IdGenerator, RandomSource, Timer } from '@svc/core';

/** The wall clock of this machine. */
export class SystemClock implements Clock {
  now(): Date {
    return new Date();
  }
}

/** Node's timers, on the wall clock; a repeating task does not keep the process alive. */
export class SystemTimer implements Timer {
  sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, milliseconds));
  }

  every(milliseconds: number, task: () => void): () => void {
    const handle = setInterval(task, milliseconds);
    handle.unref();
    return () => clearInterval(handle);
  }
}

/** Random version-4 UUIDs. */
export class RandomIdGenerator implements IdGenerator {
  uuid(): string {
    return randomUUID();
  }
}

/** Uniform random integers from a cryptographic source. */
export class CryptoRandomSource implements RandomSource {
  int(maxExclusive: number): number {
    // randomInt's own limit is 2^48; checking here gives a message that names the argument.
    if (!Number.isSafeInteger(maxExclusive) || maxExclusive < 1 || maxExclusive > 2 ** 48) {
      throw new RangeError(`maxExclusive must be an integer from 1 to 2^48, got ${maxExclusive}`);
    }
    return randomInt(maxExclusive);
  }
}

/** A new server secret: 48 random bytes in base64url (64 characters). */
export function generateSecretKey(): string {
  return randomBytes(48).toString('base64url');
}
