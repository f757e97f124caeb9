import express, { type Application } from 'express';
import type { ApiVersion, UseCases } from '@svc/core';
import { errorHandler } from './error-handler';
import { DEFAULT_FOLLOW_BUFFER_BYTES } from './follow';
import { installJsonResponse } from './json-response';
import { silentLogger, type HttpLogger } from './logger';
import { answerOptions, requestStart, selectVersion } from './middleware';
import { observeRequests, type RequestObserver } from './observe';
import { routerFor, type Route, type RouteContext } from './routing';
import { openApiDocument, type RouteShape } from './openapi';
import { inSequence } from './sequence';
import { corsPolicy, hostCheck } from './origins';
import { dashboardFiles } from './dashboard';
import { securityHeaders } from './security';
import { accountRoutes } from './routes/accounts';
import { appRoutes } from './routes/apps';
import { metricsRoutes, type MetricsEndpoint } from './routes/metrics';
import { probeRoutes } from './routes/probes';
import { releaseRoutes } from './routes/releases';
import { eventRoutes } from './routes/events';
import { NO_ADDRESSES, platformRoutes, type PlatformAddresses } from './routes/platform';
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
  /** Fields added to the `GET /readyz` answer when ready, besides `status` (e.g. `sandbox` and `warning`). */
  readyDetails?: () => Record<string, string | string[]>;
  /** Where request lines and unexpected errors are written; nothing is logged without one. */
  logger?: HttpLogger;
  /** Trust `X-Forwarded-*` headers from a reverse proxy (client address, protocol and host). */
  trustProxy?: boolean;
  /** Origins whose pages may call the API (`*`: any). Default none: cross-origin requests are refused. */
  corsAllowedOrigins?: readonly string[];
  /** Host names answered besides IP addresses, localhost and the platform domain (`.example.com`: and names under it). */
  allowedHosts?: readonly string[];
  /** Bytes of log lines held for a follower that reads slower than the log grows. Default 1 MiB. */
  followBufferBytes?: number;
  /** When aborted, open log follow streams end, so that a graceful stop need not wait for them. */
  shutdown?: AbortSignal;
  /** Told about every request once it is answered (method, route pattern, status, duration), e.g. for metrics. */
  requestObserver?: RequestObserver;
  /** Serves `GET /metrics` when given. */
  metrics?: MetricsEndpoint;
  /** The directory of the dashboard's built files, served at `/dashboard/`; absent: no dashboard. */
  dashboardDirectory?: string;
  /** Where the apps and the git server are reached, for `GET /v1/platform`; absent: neither is known. */
  platform?: () => PlatformAddresses;
}

/** Every route of the API, in the order they are tried. */
function apiRoutes(context: RouteContext): Route[] {
  return [
    ...probeRoutes(context),
    ...accountRoutes(context),
    ...appRoutes(context),
    ...releaseRoutes(context),
    ...resourceRoutes(context),
    ...eventRoutes(context),
    ...platformRoutes(context),
  ];
}

/** Method, path, authentication and version of every route, for documents and tests (no handler runs). */
export function routeTable(): RouteShape[] {
  const unused = (): never => {
    throw new Error('The route table is for reading');
  };
  const context = { useCases: {}, platformDomain: '', ready: unused, logger: silentLogger, followBufferBytes: 0, openApi: unused, platform: unused };
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
    readyDetails: options.readyDetails ?? (() => ({})),
    logger,
    followBufferBytes: options.followBufferBytes ?? DEFAULT_FOLLOW_BUFFER_BYTES,
    shutdown: options.shutdown,
    openApi: () => (document ??= openApiDocument(routes, options.platformVersion)),
    platform: options.platform ?? (() => NO_ADDRESSES),
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
      ...(options.requestObserver === undefined ? [] : [observeRequests(options.requestObserver)]),
      requestStart(options.defaultVersion, options.platformVersion, logger),
      securityHeaders,
      corsPolicy(options.corsAllowedOrigins ?? []),
      hostCheck(options.allowedHosts ?? [], options.platformDomain),
      selectVersion(options.platformVersion),
      answerOptions,
    ),
  );
  // The dashboard's files pass the same Host, CORS and version checks as the API.
  if (options.dashboardDirectory !== undefined) app.use(dashboardFiles(options.dashboardDirectory));
  // /metrics is the operator's, not the API's: it is not in the OpenAPI document.
  app.use(routerFor([...routes, ...metricsRoutes(options.metrics)], options.useCases));
  app.use(errorHandler(options.defaultVersion, options.platformVersion, logger));
  return app;
}
