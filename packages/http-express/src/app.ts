import express, { type Application } from 'express';
import type { ApiVersion, UseCases } from '@svc/core';
import { errorHandler } from './error-handler';
import { DEFAULT_FOLLOW_BUFFER_BYTES } from './follow';
import { installJsonResponse } from './json-response';
import { silentLogger, type HttpLogger } from './logger';
import { answerOptions, requestStart, selectVersion } from './middleware';
import { routerFor, type Route, type RouteContext } from './routing';
import { openApiDocument, type RouteShape } from './openapi';
import { inSequence } from './sequence';
import { securityHeaders } from './security';
import { accountRoutes } from './routes/accounts';
import { appRoutes } from './routes/apps';
import { probeRoutes } from './routes/probes';
import { releaseRoutes } from './routes/releases';
import { resourceRoutes } from './routes/resources';

/** What the HTTP edge needs from the application that embeds it. */
export interface HttpOptions {
  /** The core's use cases, e.g. from `createUseCases`. */
  useCases: UseCases;
  /** The API version of requests that do not choose one. */
  defaultVersion: ApiVersion;
  /** The platform's own version, sent in the platform-version headers. */
  platformVersion: string;
  /** Apps are reachable at `<id>.<platformDomain>`. */
  platformDomain: string;
  /** Whether the service can serve requests (e.g. the database answers), for `GET /readyz`. */
  ready?: () => Promise<boolean>;
  /** Where request lines and unexpected errors are written; nothing is logged without one. */
  logger?: HttpLogger;
  /** Trust `X-Forwarded-*` headers from a reverse proxy (for protocol and host in page links). */
  trustProxy?: boolean;
  /** Bytes of log lines held for a follower that reads slower than the log grows. Default 1 MiB. */
  followBufferBytes?: number;
  /** When aborted, open log follow streams end, so that a graceful stop need not wait for them. */
  shutdown?: AbortSignal;
}

/** Every route of the API, in the order they are tried. */
function apiRoutes(context: RouteContext): Route[] {
  return [
    ...probeRoutes(context),
    ...accountRoutes(context),
    ...appRoutes(context),
    ...releaseRoutes(context),
    ...resourceRoutes(context),
  ];
}

/** Method, path, authentication and version of every route, for documents and tests (no handler runs). */
export function routeTable(): RouteShape[] {
  const unused = (): never => {
    throw new Error('The route table is for reading');
  };
  const context = { useCases: {}, platformDomain: '', ready: unused, logger: silentLogger, followBufferBytes: 0, openApi: unused };
  return apiRoutes(context as unknown as RouteContext).map(({ method, path, auth, feature }) => ({ method, path, auth, feature }));
}

/** Builds the Express application of the controller API (not listening yet). */
export function createHttpApp(options: HttpOptions): Application {
  const logger = options.logger ?? silentLogger;
  let document: Record<string, unknown> | undefined;
  const context: RouteContext = {
    useCases: options.useCases,
    platformDomain: options.platformDomain,
    ready: options.ready ?? (async () => true),
    logger,
    followBufferBytes: options.followBufferBytes ?? DEFAULT_FOLLOW_BUFFER_BYTES,
    shutdown: options.shutdown,
    openApi: () => (document ??= openApiDocument(routes, options.platformVersion)),
  };
  const routes = apiRoutes(context);

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', options.trustProxy ?? false);
  app.set('query parser', 'simple');
  installJsonResponse(app);

  app.use(
    inSequence(
      requestStart(options.defaultVersion, options.platformVersion, logger),
      securityHeaders,
      selectVersion(options.platformVersion),
      answerOptions,
    ),
  );
  app.use(routerFor(routes, options.useCases));
  app.use(errorHandler(options.defaultVersion, options.platformVersion, logger));
  return app;
}
