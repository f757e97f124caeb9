import type { TlsName } from '../model/tls';

/** Where the HTTP-01 answers of issuances in progress are kept, for every router to serve. */
export interface ChallengeBoard {
  /** Makes `keyAuthorization` the answer to `/.well-known/acme-challenge/<token>` for `name`. */
  publish(token: string, keyAuthorization: string, name: string): Promise<void>;
  /** Takes the answer away once the server has validated (or given up). */
  withdraw(token: string): Promise<void>;
}

/** A certificate an ACME server issued, with the private key made for it. */
export interface IssuedCertificate {
  /** The full chain, PEM. */
  certificate: string;
  /** The private key, PEM (sealed before it is stored). */
  key: string;
  starts: Date;
  expires: Date;
}

/** What one issuance needs. */
export interface IssuanceRequest {
  /** The one host name the certificate is for. */
  name: string;
  /** The ACME account's private key, PEM. */
  accountKey: string;
  challenges: ChallengeBoard;
}

/**
 * A certificate authority speaking ACME (RFC 8555): proves control of a name with HTTP-01
 * and has a certificate issued for it.
 */
export interface CertificateAuthority {
  /** The directory URL of the server, identifying the account. */
  readonly directory: string;
  /** A new account private key, PEM. */
  createAccountKey(): Promise<string>;
  /**
   * Registers the account (or finds it), orders a certificate for the name, answers its
   * HTTP-01 challenge through `challenges`, and returns the certificate.
   * @throws IssuanceFailed with the server's reason (and its Retry-After, when given).
   */
  issue(request: IssuanceRequest): Promise<IssuedCertificate>;
}

/** An issuance that did not succeed: why, and when the server asked to be tried again. */
export class IssuanceFailed extends Error {
  constructor(
    /** Safe to show the app's owner: the server's problem detail or what failed. */
    readonly reason: string,
    /** The server's Retry-After, when it sent one (rate limits). */
    readonly retryAfter: Date | null = null,
    /** The server answered that a rate limit was reached (HTTP 429, `urn:ietf:params:acme:error:rateLimited`). */
    readonly rateLimited = false,
  ) {
    super(reason);
    this.name = 'IssuanceFailed';
  }
}

/**
 * A name's failures in a row and its next attempt for one owner, kept apart from the name's
 * row so that removing the name and adding it again (to any of the owner's apps) keeps them.
 * Another user who adds the name later does not inherit them.
 */
export interface IssuanceBackoff {
  name: string;
  /** The user owning the app the name was attempted for. */
  owner: string;
  failures: number;
  nextAttempt: Date;
  /** Why the last attempt failed; null while an attempt runs. */
  reason: string | null;
}

/**
 * The TLS state of every name, the ACME account, the challenges in progress and the apps'
 * HTTPS settings. Shared by every controller process of one database; every method is
 * atomic on its own.
 */
export interface TlsStore {
  /** Every recorded name, ordered by name. */
  list(): Promise<TlsName[]>;
  listForApp(app: string): Promise<TlsName[]>;
  find(name: string): Promise<TlsName | null>;
  /** Records the name unless it is recorded already. */
  insert(name: TlsName): Promise<void>;
  /** Overwrites the name's state if `holder` holds its lease; true when written. */
  save(name: TlsName, holder: string): Promise<boolean>;
  remove(name: string): Promise<void>;
  /**
   * Takes the name's issuance lease for `holder` until `until` when nobody holds it or the
   * lease expired at `now`; true when taken. One statement, so two processes never both win.
   */
  acquire(name: string, holder: string, until: Date, now: Date): Promise<boolean>;
  /** Gives the lease up if `holder` holds it. */
  release(name: string, holder: string): Promise<void>;
  /** The answer to publish at `/.well-known/acme-challenge/<token>` for a host name, or null. */
  challenge(token: string, host: string): Promise<string | null>;
  putChallenge(token: string, keyAuthorization: string, name: string, expires: Date): Promise<void>;
  removeChallenge(token: string): Promise<void>;
  /** The sealed account key for a directory URL, or null. */
  account(directory: string): Promise<string | null>;
  /** Stores the account key unless one is stored already; returns the one stored. */
  saveAccount(directory: string, sealedKey: string, created: Date): Promise<string>;
  httpsRedirect(app: string): Promise<boolean>;
  /** The apps whose plain HTTP requests are redirected to HTTPS, in one read (the router's listing of every route). */
  httpsRedirectApps(): Promise<string[]>;
  setHttpsRedirect(app: string, on: boolean): Promise<void>;
  /** The name's kept back-off for `owner`, or null. */
  backoff(name: string, owner: string): Promise<IssuanceBackoff | null>;
  /** Keeps (or replaces) the name's back-off for its owner. */
  keepBackoff(backoff: IssuanceBackoff): Promise<void>;
  /** Forgets the name's back-off for `owner` (after an issuance). */
  forgetBackoff(name: string, owner: string): Promise<void>;
  /** Forgets every back-off whose next attempt is before `cutoff`. */
  forgetBackoffsBefore(cutoff: Date): Promise<void>;
  /** Pauses new orders of every process until `until` (a later pause already recorded stays). */
  pauseOrders(until: Date): Promise<void>;
  /** Until when new orders are paused, when that is after `now`; else null. */
  ordersPausedUntil(now: Date): Promise<Date | null>;
}
