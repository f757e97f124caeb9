import pino from 'pino';
import { AppRouter, ControlSocket, RouterCluster, type AppRouterOptions } from '@svc/router-http';
import { ConfigError } from './config';
import { routerSetup } from './router-setup';
import { configOrExit, stopOnSignals } from './process-lifecycle';

/**
 * Entry point of the router as a process of its own (`npm run start:router`, ADR 0026): it
 * holds the router's ports (ROUTER_PORT, ROUTER_TLS_PORT) and its workers, and the control
 * socket (ROUTER_SOCKET) the controller connects to. It outlives the controller: while none
 * is connected it keeps serving the routes it knows, so a controller restart or upgrade drops
 * no app request. It reads the same environment as the controller.
 */
async function main(): Promise<void> {
  const config = configOrExit((config) => {
    if (config.router.socket === null) throw new ConfigError('ROUTER_SOCKET', 'must be set for the router process: the path of its control socket, the same for the controller');
    if (config.routerPort === null && config.routerTlsPort === null) throw new ConfigError('ROUTER_PORT', 'is off and ROUTER_TLS_PORT is unset: the router would listen nowhere');
  });
  // Set: checked with the configuration above.
  const socket = config.router.socket as string;
  const logger = pino({ level: config.logLevel, base: undefined });
  const setup = routerSetup(config);
  const ports: { http: number | null; https: number | null } = { http: null, https: null };
  let router: AppRouter | RouterCluster | null = null;
  const control = new ControlSocket({
    path: socket,
    ports: () => ports,
    routesChanged: () => router?.routesChanged() ?? Promise.resolve(),
    invalidateCertificate: (name) => router?.invalidateCertificate(name),
    logger,
  });
  const options: AppRouterOptions = {
    routes: control.routes,
    certificates: control.certificates,
    challenges: control.challenges,
    observer: control.observer,
    logger,
    ...(setup.routeRefreshMs === undefined ? {} : { routeRefreshMs: setup.routeRefreshMs }),
    ...(setup.accessLogSample === undefined ? {} : { accessLogSample: setup.accessLogSample }),
    ...(setup.limits === undefined ? {} : { limits: setup.limits }),
    ...(setup.upstream === undefined ? {} : { upstream: setup.upstream }),
    ...(setup.httpsPort === undefined ? {} : { httpsPort: setup.httpsPort }),
  };
  router = setup.workers === 0 ? new AppRouter(options) : new RouterCluster({ ...options, workers: setup.workers, ...(setup.logLevel === undefined ? {} : { logLevel: setup.logLevel }) });
  const running = router;
  try {
    if (config.routerPort !== null) ports.http = (await running.listen(config.routerPort, config.routerHost)).port;
    if (config.routerTlsPort !== null) ports.https = (await running.listenTls(config.routerTlsPort, config.routerHost)).port;
    await control.listen();
  } catch (error) {
    await running.close(0);
    throw error;
  }
  logger.info(
    { host: config.routerHost, port: ports.http, tlsPort: ports.https, routerSocket: config.router.socket, pid: process.pid },
    `router listening on ${config.routerHost} (http ${ports.http ?? 'off'}, https ${ports.https ?? 'off'}), control socket ${config.router.socket}`,
  );

  stopOnSignals(logger, () => Promise.all([control.close(), running.close(config.shutdownTimeoutMs)]), 'router');
}

main().catch((error: unknown) => {
  process.stderr.write(`The router failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
