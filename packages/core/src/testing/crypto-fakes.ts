import type { PasswordHasher, SecretBox, TokenGenerator } from '../ports/services';
import { base64Decode, base64Encode, utf8Decode, utf8Encode } from './encoding';

const PASSWORD_PREFIX = 'fake:';
const SEALED_PREFIX = 'sealed:';

/** A password "hash" that is the password behind a `fake:` prefix, so tests can read it back. */
export class FakePasswordHasher implements PasswordHasher {
  /** How many times `hash` was called (a use case must not hash what it does not store). */
  hashCalls = 0;

  /** Returns `fake:<password>`. */
  async hash(password: string): Promise<string> {
    this.hashCalls++;
    return PASSWORD_PREFIX + password;
  }

  /** True when `hash` is `fake:<password>`. */
  async verify(password: string, hash: string): Promise<boolean> {
    return hash === PASSWORD_PREFIX + password;
  }
}

/**
 * Tokens that count up as 40 hex characters (`000…01`, `000…02`, ...), stored under
 * `h:<token>`.
 */
export class FakeTokenGenerator implements TokenGenerator {
  /** Every token generated so far, oldest first. */
  readonly generated: string[] = [];
  private next: number;

  constructor(start = 1) {
    this.next = start;
  }

  /** The next token of the sequence. */
  generate(): string {
    const token = (this.next++).toString(16).padStart(40, '0');
    this.generated.push(token);
    return token;
  }

  /** Returns `h:<token>`. */
  hash(token: string): string {
    return `h:${token}`;
  }

  /** The most recently generated token. @throws Error when none was generated yet. */
  last(): string {
    const token = this.generated[this.generated.length - 1];
    if (token === undefined) throw new Error('No token generated yet');
    return token;
  }
}

/** Seals by base64-encoding behind `sealed:`: reversible, and visibly not the plaintext. */
export class FakeSecretBox implements SecretBox {
  /** Returns `sealed:<base64 of the UTF-8 plaintext>`. */
  seal(plaintext: string): string {
    return SEALED_PREFIX + base64Encode(utf8Encode(plaintext));
  }

  /** Reverses `seal`. @throws Error when the text was not sealed by this box. */
  open(sealed: string): string {
    if (!sealed.startsWith(SEALED_PREFIX)) throw new Error('Not sealed by FakeSecretBox');
    return utf8Decode(base64Decode(sealed.slice(SEALED_PREFIX.length)));
  }
}
