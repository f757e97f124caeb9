import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** Headers every response carries: the API serves JSON to programs, never pages to frame, sniff or cache. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  // Every answer is per caller (tokens, config values): no shared or private cache may keep it.
  'Cache-Control': 'no-store',
});

/** HSTS for one year; not for subdomains, which are the apps' own hosts under the platform domain. */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

/**
 * Sets the security headers on every response, before anything else can answer.
 * `Strict-Transport-Security` is sent only over HTTPS: a request that arrived encrypted, or
 * that a trusted proxy (`trust proxy`) reports as `X-Forwarded-Proto: https`.
 */
export function securityHeaders(req: Request, res: Response, next: NextFunction): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
  if (req.secure) res.setHeader('Strict-Transport-Security', STRICT_TRANSPORT_SECURITY);
  next();
}

securityHeaders satisfies RequestHandler;
