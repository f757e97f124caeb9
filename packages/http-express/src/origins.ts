import { isIP } from 'node:net';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { EXPOSED_HEADERS } from './headers';
import { HttpError } from './http-error';

/** Paths answered whatever the Host: probes of orchestrators that address the process by IP or service name. */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * Whether the API answers a request for this host name: any IP address (a page can only be
 * served from an address that is the address), `localhost` and names under it (they always
 * resolve to the machine itself), the platform domain and names under it (the operator's
 * DNS), and the configured names (`.example.com` stands for example.com and every name
 * under it). Any other name is what a DNS-rebinding page would send.
 */
export function isAllowedHost(hostname: string, allowed: readonly string[], platformDomain: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (isIP(name.replace(/^\[|\]$/g, '')) !== 0) return true;
  const under = (domain: string): boolean => name === domain || name.endsWith(`.${domain}`);
  if (under('localhost') || under(platformDomain.toLowerCase())) return true;
  return allowed.some((entry) => (entry.startsWith('.') ? under(entry.slice(1)) : name === entry));
}

/**
 * Refuses (400) a request whose Host names something the API does not answer for; with
 * `trust proxy`, the host is the one the proxy reports in `X-Forwarded-Host`.
 */
export function hostCheck(allowed: readonly string[], platformDomain: string): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const hostname = req.hostname as string | undefined;
    if (hostname === undefined || hostname === '' || PROBES.has(req.path) || isAllowedHost(hostname, allowed, platformDomain)) {
      next();
      return;
    }
    next(new HttpError(400, 'Invalid Host header: this server does not answer for that name.'));
  };
}

/**
 * Whether a request's `Origin` is the origin the request was sent to (`<protocol>://<host>`,
 * default ports ignored): the pages the controller serves itself (the dashboard), whose
 * browsers send `Origin` on their own POST and DELETE requests. `null`, an opaque or a
 * malformed origin is never the same. A DNS-rebinding page is same-origin with its own name
 * too, which is why the Host check refuses names the API does not answer for.
 */
export function isSameOrigin(origin: string, protocol: string, host: string | undefined): boolean {
  // A host is a name or address and a port: `user@host` or a path would parse as another host.
  if (host === undefined || !/^[A-Za-z0-9.\-:[\]]+$/.test(host)) return false;
  try {
    const sent = new URL(origin);
    // An Origin header is scheme, host and port, nothing more.
    if (sent.username !== '' || sent.password !== '' || sent.pathname !== '/' || sent.search !== '' || sent.hash !== '' || origin.endsWith('/')) return false;
    if (sent.protocol !== 'http:' && sent.protocol !== 'https:') return false;
    return sent.origin === new URL(`${protocol}://${host}`).origin;
  } catch {
    return false;
  }
}

/**
 * CORS by allow-list. A request that carries an `Origin` the list does not hold is refused
 * (403), preflight or not: a page of another site may neither read the API's answers nor
 * make it act (a form post needs no preflight). An allowed origin gets
 * `Access-Control-Allow-Origin` (itself, or `*` when the list is `*`) and the exposed
 * version headers. Without an `Origin` (command-line clients) nothing changes. The request's
 * own origin ({@link isSameOrigin}) always passes, with no CORS header: it needs none.
 */
export function corsPolicy(origins: readonly string[]): RequestHandler {
  const any = origins.includes('*');
  const allowed = new Set(origins.map((origin) => origin.toLowerCase()));
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!any) res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (origin === undefined) {
      next();
      return;
    }
    if (!any && !allowed.has(origin.toLowerCase())) {
      if (isSameOrigin(origin, req.protocol, req.host)) {
        next();
        return;
      }
      next(new HttpError(403, 'Cross-origin requests from this origin are not allowed.'));
      return;
    }
    res.setHeader('Access-Control-Allow-Origin', any ? '*' : origin);
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS.join(', '));
    next();
  };
}
