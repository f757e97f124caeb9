/** Where a name's certificate stands in automatic issuance. */
export const TLS_STATES = ['pending', 'issued', 'failed'] as const;
export type TlsState = (typeof TLS_STATES)[number];

/**
 * One host name of an app that the controller obtains a certificate for over ACME: a custom
 * domain, or the app's own `<app>.<platform domain>`. The certificate's private key is kept
 * sealed with the server secret, like the keys of uploaded certificates.
 */
export interface TlsName {
  /** The host name, lower case without a trailing dot. */
  name: string;
  /** The app the name belonged to when it was recorded. */
  app: string;
  state: TlsState;
  /** The issued chain (PEM), kept through a failed renewal; null before the first issuance. */
  certificate: string | null;
  sealedKey: string | null;
  /** When the issued certificate expires; null before the first issuance. */
  expires: Date | null;
  /** Why the last attempt failed; null after a success. */
  reason: string | null;
  /** Attempts failed in a row since the last success. */
  failures: number;
  /** The earliest time of the next attempt (backoff, the server's Retry-After). */
  nextAttempt: Date;
  updated: Date;
}

/** The TLS state of one of an app's names, as its owner sees it. */
export interface TlsNameStatus {
  name: string;
  /** `none`: ACME is off or the name was not looked at yet; `issued` also for an uploaded certificate that serves the name. */
  state: 'none' | TlsState;
  /** `acme`, or `uploaded` when a certificate uploaded through the API serves the name (it always wins). */
  source: 'acme' | 'uploaded' | null;
  expires: Date | null;
  reason: string | null;
  nextAttempt: Date | null;
}

/** An app's TLS: whether plain HTTP is redirected, and the state of each of its names. */
export interface AppTls {
  app: string;
  /** Plain HTTP requests are answered 308 to HTTPS once the host name has a certificate. */
  httpsRedirect: boolean;
  /** Whether the controller obtains certificates over ACME. */
  automatic: boolean;
  names: TlsNameStatus[];
}
