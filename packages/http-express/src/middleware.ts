import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { assertClientVersion, parseApiVersion, policyFor, type ApiVersion } from '@svc/core';
import {
  ALLOWED_METHODS,
  ALLOWED_REQUEST_HEADERS,
  CLIENT_VERSION_HEADERS,
  VERSION_REQUEST_HEADERS,
  applyVersionHeaders,
} from './headers';
import type { HttpLogger } from './logger';
import { setState, stateOf } from './state';

/** Incoming ids are echoed only when they cannot smuggle anything into logs or headers. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The first value of a request header (Node joins repeated unknown headers with ", "). */
function header(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Attaches the request state with the default version, a request id, and the headers every
 * response carries, so that even the earliest failure is answered with them.
 */
export function requestStart(defaultVersion: ApiVersion, platformVersion: string, logger: HttpLogger): RequestHandler {
  const defaultPolicy = policyFor(defaultVersion);
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = header(req, 'x-request-id');
    const requestId = incoming !== undefined && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    setState(res, { requestId, version: defaultVersion, policy: defaultPolicy, allowedMethods: new Set() });
    res.setHeader('X-Request-Id', requestId);
    applyVersionHeaders(res, defaultPolicy, platformVersion);
    // The request line is built when the response ends, unless the logger would drop it.
    if (logger.isLevelEnabled?.('info') === false) {
      next();
      return;
    }

    const started = process.hrtime.bigint();
    let logged = false;
    const log = (): void => {
      if (logged) return;
      logged = true;
      const state = stateOf(res);
      logger.info(
        {
          requestId,
          method: req.method,
          // The path only: query strings are the client's business.
          path: req.originalUrl.split('?')[0],
          status: res.statusCode,
          apiVersion: state.version,
          durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
          // A response the client did not wait for, such as a log stream it stopped reading.
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
    };
    res.on('finish', log);
    res.on('close', log);
    next();
  };
}

/**
 * Selects the API version of the request from its headers. A version this server does not
 * speak (406) or a client of another major version (405) is refused with the default
 * version's headers, which requestStart already set.
 */
export function selectVersion(platformVersion: string): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    const requested = VERSION_REQUEST_HEADERS.map((name) => header(req, name)).find((v) => v !== undefined);
    const version = requested === undefined ? undefined : parseApiVersion(requested);
    const client = CLIENT_VERSION_HEADERS.map((name) => header(req, name)).find((v) => v !== undefined);
    if (client !== undefined) assertClientVersion(client);
    // Only a request that passed both checks speaks its own version; refusals keep the default's headers.
    if (version !== undefined) {
      const state = stateOf(res);
      state.version = version;
      state.policy = policyFor(version);
      applyVersionHeaders(res, state.policy, platformVersion);
    }
    next();
  };
}

/**
 * Answers OPTIONS without authentication: a CORS preflight from an allowed origin (corsPolicy
 * refused the others before) with the methods and headers it may use, any other with 204.
 */
export function answerOptions(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'OPTIONS') {
    next();
    return;
  }
  if (req.headers.origin !== undefined) {
    res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS.join(', '));
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_REQUEST_HEADERS.join(', '));
    res.setHeader('Access-Control-Max-Age', '86400');
  }
  res.status(204).end();
}
