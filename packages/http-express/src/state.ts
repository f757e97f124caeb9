import type { Response } from 'express';
import type { ApiVersion, VersionPolicy } from '@svc/core';

/** What the edge knows about a request once its first middlewares ran. */
export interface RequestState {
  requestId: string;
  version: ApiVersion;
  policy: VersionPolicy;
  /** Methods of the routes whose path matched but whose method did not, for the 405 answer. */
  allowedMethods: Set<string>;
  /** The pattern of the route whose path matched (`/v1/apps/:id`), once one did: the metrics label. */
  route?: string;
}

const KEY = 'svcRequest';

/** Attaches the request state to the response. */
export function setState(res: Response, state: RequestState): void {
  res.locals[KEY] = state;
}

/** The request state; it exists from the first middleware on. */
export function stateOf(res: Response): RequestState {
  return res.locals[KEY] as RequestState;
}

/** The request state, or undefined when a failure happened before it was attached. */
export function maybeStateOf(res: Response): RequestState | undefined {
  return res.locals[KEY] as RequestState | undefined;
}
