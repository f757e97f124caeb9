import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import { DomainError, PreconditionFailed, Throttled, policyFor, type ApiVersion, type ErrorKind, type VersionPolicy } from '@svc/core';
import { applyVersionHeaders } from './headers';
import { HttpError } from './http-error';
import type { HttpLogger } from './logger';
import { maybeStateOf } from './state';

/** How an error is answered: status, body, extra headers. */
interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const KIND_STATUS: Record<Exclude<ErrorKind, 'hidden'>, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  throttled: 429,
  precondition_failed: 412,
  unprocessable: 422,
  unavailable: 503,
};

const detail = (message: string): { detail: string } => ({ detail: message });

function domainAnswer(error: DomainError, policy: VersionPolicy): Answer {
  // Version negotiation failures are domain errors of kind `invalid` with statuses of their own.
  if (error.code === 'API.UNSUPPORTED_VERSION') return { status: 406, body: detail(error.message) };
  if (error.code === 'API.CLIENT_VERSION_MISMATCH') return { status: 405, body: detail(error.message) };
  if (error.fields !== undefined) return { status: 400, body: { ...error.fields } };
  if (error.kind === 'hidden') {
    // As a 404 it must be indistinguishable from an app that does not exist.
    return policy.hiddenAppStatus === 404
      ? { status: 404, body: detail('Not found.') }
      : { status: 403, body: detail(error.message) };
  }
  const status = KIND_STATUS[error.kind];
  const headers: Record<string, string> = {};
  if (error.kind === 'unauthenticated') headers['WWW-Authenticate'] = 'Token';
  if (error instanceof Throttled || error.kind === 'throttled') {
    const seconds = (error as Partial<Throttled>).retryAfterSeconds;
    if (typeof seconds === 'number' && Number.isFinite(seconds)) headers['Retry-After'] = String(Math.max(0, Math.ceil(seconds)));
  }
  if (error instanceof PreconditionFailed) headers.ETag = error.etag;
  const bare = policy.errorBody === 'bare-string' && (status === 400 || status === 503);
  return { status, body: bare ? error.message : detail(error.message), headers };
}

/** Messages of our own for failures the framework reports, so no library text reaches clients. */
const CLIENT_ERROR_DETAILS: Record<string, string> = {
  'entity.too.large': 'Request body too large: the limit is 1 MiB.',
  'encoding.unsupported': 'Unsupported content encoding.',
  'charset.unsupported': 'Unsupported charset.',
  'request.aborted': 'The request was aborted.',
  'request.size.invalid': 'The request body does not match its Content-Length.',
  'parameters.too.many': 'Too many parameters.',
};

function clientErrorStatus(error: unknown): number | null {
  if (typeof error !== 'object' || error === null) return null;
  const { status, statusCode } = error as { status?: unknown; statusCode?: unknown };
  const value = typeof status === 'number' ? status : statusCode;
  return typeof value === 'number' && value >= 400 && value < 500 ? value : null;
}

function frameworkAnswer(error: unknown, status: number): Answer {
  const type = (error as { type?: unknown }).type;
  const known = typeof type === 'string' ? CLIENT_ERROR_DETAILS[type] : undefined;
  if (known !== undefined) return { status, body: detail(known) };
  if (error instanceof URIError) return { status: 400, body: detail('Malformed URL: invalid percent-encoding.') };
  return { status, body: detail(`${STATUS_CODES[status] ?? 'Bad request'}.`) };
}

/**
 * The one place where errors become HTTP answers: domain errors by kind and version policy,
 * edge errors by their own status, framework client errors by theirs, and anything else as
 * a 500 that reveals nothing but the request id.
 */
export function errorHandler(defaultVersion: ApiVersion, platformVersion: string, logger: HttpLogger): ErrorRequestHandler {
  const defaultPolicy = policyFor(defaultVersion);
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const state = maybeStateOf(res);
    const requestId = state?.requestId;
    let answer: Answer;
    if (DomainError.is(error)) {
      answer = domainAnswer(error, state?.policy ?? defaultPolicy);
      if (answer.status === 503) {
        // The client sees the reason too; operators need to know the scheduler is failing.
        logger.warn({ requestId, code: error.code, reason: error.message }, 'dependency unavailable');
      }
    } else if (error instanceof HttpError) {
      answer = { status: error.status, body: detail(error.detail), headers: { ...error.headers } };
    } else {
      const status = clientErrorStatus(error);
      if (status !== null) {
        answer = frameworkAnswer(error, status);
      } else {
        logger.error(
          {
            requestId,
            method: req.method,
            path: req.originalUrl.split('?')[0],
            err: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : { value: String(error) },
          },
          'unhandled error',
        );
        answer = { status: 500, body: { detail: 'Internal server error.', request_id: requestId ?? null } };
      }
    }

    if (res.headersSent) {
      // Too late for a proper answer; ending the response is all that is left.
      res.end();
      return;
    }
    // The contract: 405 and 406 speak the server's default version, whatever the request chose.
    if (answer.status === 405 || answer.status === 406) applyVersionHeaders(res, defaultPolicy, platformVersion);
    for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
    res.status(answer.status).json(answer.body);
  };
}
