import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Actor, ApiVersion, RequestContext, UseCases, VersionPolicy, VersionedFeature } from '@svc/core';
import { optionalActor, requireActor } from './auth';
import { readBody } from './body';
import { idempotently } from './idempotency';
import { methodNotAllowed, routeNotFound } from './http-error';
import type { HttpLogger } from './logger';
import type { PlatformAddresses } from './routes/platform';
import { stateOf } from './state';

/** What every handler gets: the request, its version, its caller and its parsed body. */
export interface Call<A extends Actor | null> {
  req: Request;
  res: Response;
  version: ApiVersion;
  policy: VersionPolicy;
  actor: A;
  /** The parsed body (`{}` when empty); GET requests have none. */
  body: unknown;
}

/** What route modules need from the application. */
export interface RouteContext {
  useCases: UseCases;
  platformDomain: string;
  ready: () => Promise<boolean>;
  /** Extra fields of a ready answer (e.g. a warning that apps run unconfined); none by default. */
  readyDetails: () => Record<string, string | string[]>;
  logger: HttpLogger;
  /** Bytes of log lines held for a slow follower. */
  followBufferBytes: number;
  /** Ends log follow streams when aborted. */
  shutdown?: AbortSignal;
  /** The OpenAPI document of the routes (built from the route table once, on first use). */
  openApi: () => Record<string, unknown>;
  /** Where the apps and the git server are reached, read at each request (listeners bound after the API's are known then). */
  platform: () => PlatformAddresses;
}

type Method = 'get' | 'post' | 'delete';

interface RouteBase {
  method: Method;
  /** Express path; a trailing slash is matched too. */
  path: string;
  /** The endpoint exists only from the version that introduced this feature. */
  feature?: VersionedFeature;
}

/** One endpoint: method, path, who may call it, and its handler. */
export type Route =
  | (RouteBase & { auth: 'required'; handle: (call: Call<Actor>) => Promise<void> })
  | (RouteBase & { auth: 'optional'; handle: (call: Call<Actor | null>) => Promise<void> })
  | (RouteBase & { auth: 'none'; handle: (call: Call<null>) => Promise<void> });

/** An endpoint for authenticated callers. */
export function authed(
  method: Method,
  path: string,
  handle: (call: Call<Actor>) => Promise<void>,
  feature?: VersionedFeature,
): Route {
  return { method, path, auth: 'required', handle, feature };
}

/** An endpoint that anyone may call. */
export function open(method: Method, path: string, handle: (call: Call<null>) => Promise<void>): Route {
  return { method, path, auth: 'none', handle };
}

/** An endpoint that anyone may call and that knows the caller when a valid token is given. */
export function openWithCaller(method: Method, path: string, handle: (call: Call<Actor | null>) => Promise<void>): Route {
  return { method, path, auth: 'optional', handle };
}

const available = (route: Route, policy: VersionPolicy): boolean =>
  route.feature === undefined || policy.features.has(route.feature);

function handlerFor(route: Route, useCases: UseCases) {
  return async (req: Request, res: Response): Promise<void> => {
    const state = stateOf(res);
    state.route = route.path;
    const { version, policy } = state;
    // Endpoints of a later version do not exist for this request: not even their auth applies.
    if (!available(route, policy)) throw routeNotFound();
    // Credentials are checked before the body is read, so strangers cannot make us buffer it.
    // GET requests have none: no read, and no await to pay for one.
    switch (route.auth) {
      case 'required': {
        const actor = withRequest(await requireActor(req, useCases), req, res);
        const body = route.method === 'get' ? {} : await readBody(req, res);
        const run = () => route.handle({ req, res, version, policy, actor, body });
        await (route.method === 'post' ? idempotently(useCases, req, res, actor, body, run) : run());
        return;
      }
      case 'optional': {
        const found = await optionalActor(req, useCases);
        const actor = found === null ? null : withRequest(found, req, res);
        const body = route.method === 'get' ? {} : await readBody(req, res);
        const run = () => route.handle({ req, res, version, policy, actor, body });
        await (route.method === 'post' ? idempotently(useCases, req, res, actor, body, run) : run());
        return;
      }
      case 'none': {
        const body = route.method === 'get' ? {} : await readBody(req, res);
        await route.handle({ req, res, version, policy, actor: null, body });
      }
    }
  };
}

/** What the core learns of the request its actor makes: id, client address and `If-Match`. */
export function requestContextOf(req: Request, res: Response): RequestContext {
  const ifMatch = req.headers['if-match'];
  return {
    id: stateOf(res).requestId,
    address: req.ip ?? req.socket.remoteAddress ?? '',
    ...(typeof ifMatch === 'string' ? { ifMatch } : {}),
  };
}

function withRequest(actor: Actor, req: Request, res: Response): Actor {
  return { ...actor, request: requestContextOf(req, res) };
}

const METHOD_ORDER = ['GET', 'POST', 'DELETE'];

/**
 * A router for the routes, answering 405 (with `Allow`) for a known path asked with another
 * method and 404 for anything else. Paths that overlap (`containers/restart` and
 * `containers/:type`) are tried in order, and their methods add up in `Allow`.
 */
export function routerFor(routes: readonly Route[], useCases: UseCases): Router {
  const router = Router({ caseSensitive: true, strict: false });
  for (const route of routes) router[route.method](route.path, handlerFor(route, useCases));

  const byPath = new Map<string, Route[]>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
  for (const [path, sharing] of byPath) {
    router.all(path, (_req: Request, res: Response, next: NextFunction) => {
      const state = stateOf(res);
      state.route ??= path;
      for (const route of sharing) if (available(route, state.policy)) state.allowedMethods.add(route.method.toUpperCase());
      next();
    });
  }

  router.use((req: Request, res: Response) => {
    const allowed = [...stateOf(res).allowedMethods].sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
    if (allowed.length === 0) throw routeNotFound();
    const withImplicit = [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : []), 'OPTIONS'];
    throw methodNotAllowed(req.method, withImplicit);
  });
  return router;
}
