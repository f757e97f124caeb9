import { ValidationFailed } from '../errors';

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Normalises and checks a custom domain: an RFC 1123 hostname of at least two labels, in
 * lower case without a trailing dot, not a wildcard, and not the platform's own domain.
 * @throws ValidationFailed on field `domain`.
 */
export function normalizeDomain(raw: unknown, platformDomain: string): string {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw ValidationFailed.field('domain', raw === undefined || raw === null ? 'This field is required.' : 'Not a valid string.');
  }
  let domain = raw.trim().toLowerCase();
  if (domain.endsWith('.')) domain = domain.slice(0, -1);
  if (domain.includes('*')) throw ValidationFailed.field('domain', 'Wildcard domains are not supported.');
  const labels = domain.split('.');
  const valid =
    domain.length <= 253 &&
    labels.length >= 2 &&
    labels.every((label) => LABEL.test(label)) &&
    !/^[0-9]+$/.test(labels[labels.length - 1] as string);
  if (!valid) throw ValidationFailed.field('domain', `Hostname does not look valid: ${raw}`);
  const platform = platformDomain.toLowerCase();
  if (domain === platform || domain.endsWith(`.${platform}`)) {
    throw ValidationFailed.field('domain', `Domains under ${platform} are reserved for the platform.`);
  }
  return domain;
}

/**
 * The domains a (normalised) custom domain is under, nearest first, down to two labels:
 * `a.shop.example.com` → `shop.example.com`, `example.com`. Whoever holds one of them holds
 * the names under it (see ADR 0037).
 */
export function parentDomains(domain: string): string[] {
  const labels = domain.split('.');
  const parents: string[] = [];
  for (let start = 1; labels.length - start >= 2; start += 1) parents.push(labels.slice(start).join('.'));
  return parents;
}
