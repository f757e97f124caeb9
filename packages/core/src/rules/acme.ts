import { ValidationFailed } from '../errors';
import type { TlsName } from '../model/tls';
import { bodyObject } from './fields';

/** How automatic certificates are renewed and retried. */
export interface AcmeSettings {
  /** A certificate is renewed this long before it expires (default 30 days). */
  renewBeforeSeconds: number;
  /** The wait after the first failure; it doubles with each further one. */
  retryBaseSeconds: number;
  /** The longest wait between two attempts. */
  retryMaxSeconds: number;
  /** How long one process holds a name while it issues it. */
  leaseSeconds: number;
  /** How many orders one process runs at once, the owners taking turns (ACME_CONCURRENCY). */
  concurrency: number;
  /** How many names of one owner may wait for their first certificate and be ordered; the others wait (ACME_PENDING_PER_USER). */
  pendingPerOwner: number;
}

/**
 * The defaults: renew 30 days ahead, retry after 5 minutes doubling up to a day, 5-minute
 * leases, four orders at once, ten names per owner ordered before their first certificate.
 */
export const DEFAULT_ACME_SETTINGS: AcmeSettings = Object.freeze({
  renewBeforeSeconds: 30 * 24 * 3600,
  retryBaseSeconds: 300,
  retryMaxSeconds: 24 * 3600,
  leaseSeconds: 300,
  concurrency: 4,
  pendingPerOwner: 10,
});

/**
 * The host names of an app that get a certificate over ACME: its custom domains, and its own
 * `<app>.<platform domain>` unless the operator serves a wildcard for the platform domain.
 * Only names that belong to the app: nothing else is ever requested.
 */
export function acmeNamesOf(appId: string, domains: readonly string[], platformDomain: string, platformWildcard: boolean): string[] {
  const names = [...domains.map((domain) => domain.toLowerCase())];
  const platform = platformDomain.toLowerCase();
  // A one-label platform domain (localhost) has no public names to prove.
  if (!platformWildcard && platform.includes('.')) names.push(`${appId}.${platform}`);
  return [...new Set(names)].sort();
}

/** The wait before attempt number `failures + 1` after `failures` failures in a row: doubling from the base, capped. */
export function retryDelaySeconds(failures: number, settings: Pick<AcmeSettings, 'retryBaseSeconds' | 'retryMaxSeconds'>): number {
  if (failures <= 0) return 0;
  const delay = settings.retryBaseSeconds * 2 ** Math.min(failures - 1, 30);
  return Math.min(settings.retryMaxSeconds, delay);
}

/** When a failed attempt may be made again: the backoff, or later if the server's Retry-After says so. */
export function nextAttemptAfterFailure(now: Date, failures: number, retryAfter: Date | null, settings: AcmeSettings): Date {
  const backoff = now.getTime() + retryDelaySeconds(failures, settings) * 1000;
  return new Date(Math.max(backoff, retryAfter?.getTime() ?? 0));
}

/** Whether the name needs an attempt now: never issued (or failed) and its wait is over, or issued and within the renewal window. */
export function issuanceDue(name: TlsName, now: Date, settings: Pick<AcmeSettings, 'renewBeforeSeconds'>): boolean {
  if (name.nextAttempt.getTime() > now.getTime()) return false;
  if (name.expires === null || name.certificate === null) return true;
  return name.expires.getTime() - settings.renewBeforeSeconds * 1000 <= now.getTime();
}

/**
 * Reads the body of `PUT /v1/apps/<id>/tls/`: `{"https_redirect": true|false}`.
 * @throws ValidationFailed on `https_redirect`.
 */
export function parseTlsSettings(body: unknown): { httpsRedirect: boolean } {
  const value = bodyObject(body).https_redirect;
  if (typeof value === 'boolean') return { httpsRedirect: value };
  if (value === 'true' || value === 'false') return { httpsRedirect: value === 'true' };
  throw ValidationFailed.field('https_redirect', value === undefined ? 'This field is required.' : 'Must be a boolean.');
}

/** The challenge path prefix of HTTP-01 (RFC 8555 §8.3). */
export const ACME_CHALLENGE_PREFIX = '/.well-known/acme-challenge/';
