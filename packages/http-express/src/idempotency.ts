import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Actor, StoredResponse, UseCases } from '@svc/core';

/** The request header that makes a POST idempotent, and the answer header of a replay. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** Headers of a stored answer that belong to the request that made it, not to a replay. */
const PER_REQUEST_HEADERS = new Set(['x-request-id', 'date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

/** What makes two requests with one key the same request: method, path and body. */
export function requestFingerprint(req: Request, body: unknown): string {
  // `/config` and `/config/` are one endpoint: a retry may spell it either way.
  const path = `${req.baseUrl}${req.path}`.replace(/\/+$/, '');
  return createHash('sha256').update(`${req.method} ${path}\n${JSON.stringify(body ?? {})}`).digest('hex');
}

/** The stored answer sent again, marked as a replay. */
export function replay(res: Response, response: StoredResponse): void {
  res.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) if (!PER_REQUEST_HEADERS.has(name)) res.setHeader(name, value);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.end(response.body);
}

/** Keeps what the answer's `end` writes, and stores it before the answer leaves. */
function captureAnswer(res: Response, store: (response: StoredResponse) => Promise<void>): void {
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  const patched = (...args: unknown[]): Response => {
    const [chunk] = args;
    const body = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(res.getHeaders())) {
      if (value !== undefined && !PER_REQUEST_HEADERS.has(name)) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    res.end = end as Response['end'];
    // The answer goes out once it is stored, so that a repeat never finds the key still running.
    void store({ status: res.statusCode, headers, body })
      .catch(() => undefined)
      .finally(() => end(...args));
    return res;
  };
  res.end = patched as Response['end'];
}

/**
 * Runs `handle` once per user and `Idempotency-Key`: the first request runs and its answer is
 * stored; a repeat is answered from the store (or refused: 422 for another request, 409 while
 * the first runs). Without the header, or without a caller, `handle` simply runs.
 */
export async function idempotently(
  useCases: UseCases,
  req: Request,
  res: Response,
  actor: Actor | null,
  body: unknown,
  handle: () => Promise<void>,
): Promise<void> {
  const key = req.headers[IDEMPOTENCY_KEY_HEADER];
  if (typeof key !== 'string' || actor === null) return handle();
  const username = actor.user.username;
  const start = await useCases.startIdempotentRequest.execute(username, key, requestFingerprint(req, body));
  if (start === null) return handle();
  if (start.kind === 'replay') {
    replay(res, start.response);
    return;
  }
  captureAnswer(res, (response) => useCases.finishIdempotentRequest.execute(username, key, response));
  await handle();
}
