/** The path prefix of ACME HTTP-01 challenges (RFC 8555 §8.3). */
export const CHALLENGE_PREFIX = '/.well-known/acme-challenge/';

const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * The token of a request for an ACME HTTP-01 challenge: undefined when the request target is
 * not under the challenge path, null when it is but names no well-formed token.
 */
export function challengeToken(target: string): string | null | undefined {
  if (!target.startsWith(CHALLENGE_PREFIX)) return undefined;
  const token = (target.slice(CHALLENGE_PREFIX.length).split('?')[0] ?? '').split('#')[0] ?? '';
  return TOKEN.test(token) ? token : null;
}

/**
 * Where a plain HTTP request is redirected when its app wants HTTPS: the same host name and
 * target, on the HTTPS port (left out when it is 443).
 */
export function httpsLocation(host: string, target: string, httpsPort: number): string {
  const path = target.startsWith('/') ? target : '/';
  return `https://${host}${httpsPort === 443 ? '' : `:${httpsPort}`}${path}`;
}
