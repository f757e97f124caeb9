import type { Request, Response } from 'express';
import { etagListMatches } from '@svc/core';

/**
 * Sends the resource's `ETag`; when the request's `If-None-Match` names it, answers 304
 * with no body and returns true (the caller sends nothing more).
 */
export function notModified(req: Request, res: Response, etag: string): boolean {
  res.setHeader('ETag', etag);
  const ifNoneMatch = req.headers['if-none-match'];
  if (typeof ifNoneMatch !== 'string' || !etagListMatches(ifNoneMatch, etag)) return false;
  res.status(304).end();
  return true;
}
