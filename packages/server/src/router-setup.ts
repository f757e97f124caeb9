import type { RouterSetup } from './composition';
import type { ServerConfig } from './config';

/** How the router runs, from the ROUTER_* settings: the same for the controller's own router and for a router process of its own. */
export function routerSetup(config: ServerConfig): RouterSetup {
  return {
    workers: config.router.workers,
    routeRefreshMs: config.router.routeRefreshMs,
    accessLogSample: config.router.accessLogSample,
    limits: {
      maxConnections: config.router.maxConnections,
      maxConnectionsPerClient: config.router.maxConnectionsPerClient,
      reservedConnections: config.router.reservedConnections,
      headersTimeoutMs: config.router.headersTimeoutMs,
      idleTimeoutMs: config.router.idleTimeoutMs,
    },
    upstream: {
      maxSockets: config.router.upstreamMaxSockets,
      maxIdleSockets: config.router.upstreamIdleSockets,
      idleTimeoutMs: config.router.upstreamIdleTimeoutMs,
    },
    logLevel: config.logLevel,
    socket: config.router.socket,
    ...(config.routerTlsPort !== null && config.routerTlsPort > 0 ? { httpsPort: config.routerTlsPort } : {}),
  };
}
