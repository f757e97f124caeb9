import type { Request } from 'express';
import { NotAuthenticated, type Actor, type UseCases } from '@svc/core';

/** The answer when no usable credentials came with the request. */
export const NO_CREDENTIALS = 'Authentication credentials were not provided.';

/** The token of an `Authorization: token <t>` header (scheme case-insensitive), null when none is given. */
function presentedToken(req: Request): string | null {
  const header = req.headers.authorization;
  if (header === undefined || header.trim() === '') return null;
  const [scheme = '', ...rest] = header.trim().split(/\s+/);
  // Another scheme is not ours to judge: the request simply carries no token.
  if (scheme.toLowerCase() !== 'token') return null;
  if (rest.length !== 1) throw new NotAuthenticated();
  return rest[0] as string;
}

/**
 * Resolves the caller of a request that must be authenticated.
 * @throws NotAuthenticated without a token or with an invalid one.
 */
export async function requireActor(req: Request, useCases: UseCases): Promise<Actor> {
  const token = presentedToken(req);
  if (token === null) throw new NotAuthenticated(NO_CREDENTIALS);
  return useCases.authenticate.execute(token);
}

/**
 * Resolves the caller of a request where credentials are optional; a token that is given
 * must still be valid.
 * @throws NotAuthenticated for an invalid token.
 */
export async function optionalActor(req: Request, useCases: UseCases): Promise<Actor | null> {
  const token = presentedToken(req);
  return token === null ? null : useCases.authenticate.execute(token);
}
