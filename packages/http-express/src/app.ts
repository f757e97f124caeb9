import express, { type Application } from 'express';
import type { ApiVersion, UseCases } from '@svc/core';
import { errorHandler } from './error-handler';
import { silentLogger, type HttpLogger } from './logger';
import { answerOptions, requestStart, selectVersion } from './middleware';
import { routerFor, type RouteContext } from './routing';
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
}

/** Builds the Express application of the controller API (not listening yet). */
export function createHttpApp(options: HttpOptions): Application {
  const logger = options.logger ?? silentLogger;
  const context: RouteContext = {
    useCases: options.useCases,
    platformDomain: options.platformDomain,
    ready: options.ready ?? (async () => true),
    logger,
  };

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', options.trustProxy ?? false);
  app.set('query parser', 'simple');

  app.use(requestStart(options.defaultVersion, options.platformVersion, logger));
  app.use(selectVersion(options.platformVersion));
  app.use(answerOptions);
  app.use(
    routerFor(
      [
        ...probeRoutes(context),
        ...accountRoutes(context),
        ...appRoutes(context),
        ...releaseRoutes(context),
        ...resourceRoutes(context),
      ],
      options.useCases,
    ),
  );
  app.use(errorHandler(options.defaultVersion, options.platformVersion, logger));
  return app;
}
