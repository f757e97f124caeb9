import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Scheduler, UseCases } from '@svc/core';
import { httpServerOptions, limitConnections, timeoutOptions } from '@svc/http-express';
import { createDatabase } from '@svc/persistence-typeorm';
import { DEFAULT_UID_RANGE, evictSquatters, type ProcessScheduler, type SandboxStatus } from '@svc/scheduler-process';
import type { DockerScheduler, SwarmScheduler } from '@svc/scheduler-docker';
import { loadOrCreateHostKey, type HostKey } from '@svc/builder-git';
import { ControllerMetrics, createAcmeMetrics, createRouterMetrics } from '@svc/metrics-prometheus';
import { AcmeRounds, acmeRoundsOnChanges, acmeSetup, leaseHolder } from './acme';
import { checkPorts } from './preflight';
import { acquireDataDirLock } from './data-dir-lock';
import { appUrl, publicRouter, type PublicRouter } from './public-addresses';
import { routerSetup } from './router-setup';
import { compose, type GitSetup, type PlatformRouter } from './composition';
import { dashboardDirectory } from './dashboard';
import { platformVersion, resolveSecretKey, sharedSecretKey } from './secret-key';
export { platformVersion, resolveSecretKey } from './secret-key';
import { eventPorts, startEventWorkers } from './events';
import type { PlatformRouteTable } from './routing';
import type { SchedulerKind, ServerConfig } from './config';
import { SchedulerStartup, chooseScheduler, schedulerSetup } from './schedulers';
export { pickScheduler } from './schedulers';

/** A started controller. */
export interface RunningServer {
  /** e.g. `http://127.0.0.1:8000` */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to the shutdown timeout), stops the apps' processes, closes the database. */
  close(): Promise<void>;
  /** The scheduler the controller uses (wrapped in fault injection when SCHEDULER_CHAOS is set). */
  scheduler: Scheduler;
  /** With SCHEDULER=process, the scheduler that runs the apps' processes (endpoints of `up` processes); else null. */
  processScheduler: ProcessScheduler | null;
  /** With SCHEDULER=docker (or picked), the scheduler that runs the apps' containers on the engine; else null. */
  dockerScheduler: DockerScheduler | null;
  /** With SCHEDULER=swarm, the scheduler that runs the apps as services of the swarm DOCKER_HOST manages; else null. */
  swarmScheduler: SwarmScheduler | null;
  /** The scheduler in use: SCHEDULER, or the one picked when it is unset. */
  schedulerKind: SchedulerKind;
  /** The port of the git SSH server (`git push` deploys); null when GIT_SSH_PORT is `off`. */
  gitPort: number | null;
  /** The router's HTTP port (app traffic); null when ROUTER_PORT is `off`. */
  routerPort: number | null;
  /** The router's HTTPS port; null when ROUTER_TLS_PORT is not set. */
  routerTlsPort: number | null;
  /** How apps are confined (SCHEDULER=process); null with another scheduler. */
  sandbox: SandboxStatus | null;
  /** What `GET /readyz` adds now: `status: 'degraded'` with `reasons` when apps or builds cannot run. */
  readiness(): Record<string, string | string[]>;
}

/**
 * Where the git server keeps its repositories (`DATA_DIR/git`) and build directories
 * (`DATA_DIR/builds`), with the host key generated once in `DATA_DIR/ssh_host_ed25519_key`.
 */
function gitSetup(config: ServerConfig, dataDir: string, apps: () => PublicRouter | null): { setup: GitSetup; hostKey: HostKey } {
  const hostKey = loadOrCreateHostKey(join(dataDir, 'ssh_host_ed25519_key'));
  const domain = config.settings.platformDomain;
  return {
    hostKey,
    setup: {
      repositories: join(dataDir, 'git'),
      builds: join(dataDir, 'builds'),
      hostKey: hostKey.privateKey,
      ...config.gitConnections,
      // Shown to the pusher once the app is released: where the router answers for it.
      appUrl: (appId) => {
        const router = apps();
        return router === null ? null : appUrl(`${appId}.${domain}`, router);
      },
    },
  };
}

/** The listening address as an allowed Host when it is a name (not a wildcard address). */
function configuredHost(host: string): string[] {
  const name = host.toLowerCase();
  return name === '0.0.0.0' || name === '::' || name.includes(':') || /^[0-9.]+$/.test(name) ? [] : [name];
}

/**
 * The port of the controller's PostgreSQL when `DATABASE_URL` names this machine (`localhost`,
 * a `127.x` address, `::1`): no app may answer on it at another loopback address either. Null
 * for another host, or without a URL.
 */
export function localDatabasePort(url: string | null): number | null {
  if (url === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const local = host === '' || host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '::1';
  return local ? Number(parsed.port || 5432) : null;
}

/** Logs refused connections at most once every 10 s with how many there were, so that a flood does not flood the log. */
export function refusalLog(logger: Logger, server: string): (reason: 'total' | 'address', client: string) => void {
  let last = 0;
  let since = 0;
  return (reason, client) => {
    since += 1;
    const now = Date.now();
    if (now - last < 10_000) return;
    logger.warn({ server, reason, client, refused: since }, `${server}: connections refused, too many open`);
    last = now;
    since = 0;
  };
}

/**
 * Watches the API's requests: once one that may change routes (any write to an app, its
 * domains, formation or releases, or to certificates) has been answered, the router looks
 * its routes up again instead of waiting for its periodic refresh. One refresh runs at a
 * time: the changes answered while it runs make one more after it, so each change is
 * followed by a refresh that started after it, and a stream of changes costs the router's
 * workers one round of messages at a time rather than one per change.
 */
function routeChangesOf(router: PlatformRouter, routeTable: PlatformRouteTable): (req: IncomingMessage, res: ServerResponse) => void {
  let scheduled: ReturnType<typeof setTimeout> | null = null;
  let running = false;
  let again = false;
  // Whether every change since the last refresh left the host names as they were.
  let processesOnly = true;
  let changedApps = new Set<string>();
  const refresh = (): void => {
    scheduled = null;
    running = true;
    routeTable.forget(processesOnly, changedApps);
    processesOnly = true;
    changedApps = new Set();
    router
      .routesChanged()
      .catch(() => undefined)
      .finally(() => {
        running = false;
        if (again) request();
      });
  };
  const request = (): void => {
    again = running;
    if (!running) scheduled ??= setTimeout(refresh, 0);
  };
  return (req, res) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    const path = req.url ?? '';
    const certificates = path.includes('/certs');
    if (!certificates && !path.includes('/apps')) return;
    res.once('finish', () => {
      if (res.statusCode >= 400) return;
      if (certificates) router.invalidateCertificate();
      if (!keepsHostNames(path)) processesOnly = false;
      else changedApps.add(appOfPath(path));
      request();
    });
  };
}

/**
 * Whether a write to this path leaves every host name with its app: the app's config, builds,
 * releases, processes, collaborators and webhooks. Anything else (an app created, changed or
 * deleted, its domains, certificates, a path not known here) may change them.
 */
export function keepsHostNames(path: string): boolean {
  return /^\/v1\/apps\/[^/]+\/(config|builds|releases|containers|perms|webhooks)(\/|$|\?)/.test(path);
}

/** The app a `/v1/apps/<app>/...` path names (one `keepsHostNames` accepted). */
function appOfPath(path: string): string {
  const name = path.slice('/v1/apps/'.length).split('/')[0] as string;
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolveListen(server.address() as AddressInfo);
    });
  });
}

/** Cleans up expired deploy leases; a failure is logged and left for the next sweep. */
async function sweepDeploys(useCases: UseCases, logger: Logger): Promise<void> {
  try {
    const { recovered } = await useCases.recoverDeploys.execute({ all: false });
    if (recovered > 0) logger.warn({ recovered }, 'cleaned up deploys whose controller process stopped renewing them');
  } catch (error) {
    logger.warn({ err: error }, 'could not look for interrupted deploys');
  }
}

/**
 * Starts the controller: first the lock of its data directory (data-dir-lock.ts: a second
 * controller on it would take the first one's apps for leftovers), then database (migrated),
 * composition, HTTP listener. The lock goes when the start fails, or once `close` has stopped it.
 */
export async function startServer(config: ServerConfig, logger: Logger): Promise<RunningServer> {
  // The router's ports are this process's unless a router process of its own holds them (ROUTER_SOCKET).
  const ownRouter = config.router.socket === null;
  const lock = await acquireDataDirLock(resolve(config.dataDir), {
    host: config.host,
    ports: { api: config.port, router: ownRouter ? config.routerPort : null, routerTls: ownRouter ? config.routerTlsPort : null, git: config.gitSshPort },
    logger,
  });
  let running: RunningServer;
  try {
    running = await startHolding(config, logger);
  } catch (error) {
    await lock.release();
    throw error;
  }
  // The ports as bound (0 in the configuration: any free one), for the message of a start refused.
  await lock.update({ api: running.port, router: running.routerPort, routerTls: running.routerTlsPort, git: running.gitPort }).catch((error: unknown) => {
    logger.warn({ err: error, lockFile: lock.file }, 'could not record the bound ports in the lock file of DATA_DIR');
  });
  return { ...running, close: () => running.close().finally(() => lock.release()) };
}

/** The start proper, with the data directory's lock held. */
async function startHolding(config: ServerConfig, logger: Logger): Promise<RunningServer> {
  // Before anything is made: a port taken stops the start naming its setting (preflight.ts).
  // A router process of its own (ROUTER_SOCKET) holds the router's ports, not this one.
  const ownRouter = config.router.socket === null;
  // With a router process of its own the apps outlived the last controller process: a sandboxed
  // one may have bound the API's or git server's port meanwhile. Its processes go, or no controller could start.
  if (!ownRouter && config.processes.sandbox !== null) {
    const evicted = await evictSquatters([config.port, config.gitSshPort ?? 0], config.processes.sandbox.uidRange ?? DEFAULT_UID_RANGE);
    if (evicted.length > 0) logger.warn({ evicted }, "stopped the processes of apps that listened on the controller's ports while no controller ran");
  }
  await checkPorts(ownRouter ? config : { ...config, routerPort: null, routerTlsPort: null });
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });

  const database = await createDatabase({
    url: config.databaseUrl ?? undefined,
    dataDir,
    poolSize: config.dbPoolSize,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    connectRetries: config.dbConnectRetries,
    // Applied migrations, connection retries and slow queries are for the operator's log.
    logger: { info: (message) => logger.info(message), warn: (message) => logger.warn(message) },
  });
  // With PostgreSQL, several processes share the database: nothing they all need stays on local disk.
  const shared = config.databaseUrl !== null;
  let secretKey: string;
  try {
    await database.migrate();
    secretKey = shared && config.secretKey === null ? await sharedSecretKey(database, dataDir, logger) : resolveSecretKey({ ...config, dataDir }, logger);
  } catch (error) {
    await database.close();
    throw error;
  }

  // Set once the router and the git server listen; pushers and GET /v1/platform are told the apps' address on the router.
  let routerPort: number | null = null;
  let routerTlsPort: number | null = null;
  let gitPort: number | null = null;
  const apps = (): PublicRouter | null => publicRouter(config.appsUrl, { http: routerPort, https: routerTlsPort });
  const git = config.gitSshPort === null ? null : gitSetup(config, dataDir, apps);
  // Ends log follow streams at shutdown: they would otherwise hold the stop up to its timeout.
  const shutdown = new AbortController();
  // Which scheduler, and what it must have ready before the controller serves: schedulers.ts.
  const scheduling = new SchedulerStartup({ shared, logger, keepApps: !ownRouter });
  let schedulerKind: SchedulerKind;
  try {
    schedulerKind = await chooseScheduler(config, dataDir, () => database.appsWithContainers(), logger);
  } catch (error) {
    await database.close();
    throw error;
  }
  const metrics = config.metrics.enabled
    ? new ControllerMetrics({
        containers: () => database.containerCountsByState(),
        pool: () => database.poolStats(),
        version: platformVersion(),
      })
    : null;
  const routerMetrics = metrics === null ? null : createRouterMetrics(metrics.registry);
  const events = eventPorts(database, config.events);
  const tls = database.createTlsStore();
  const acme = acmeSetup(config.acme, metrics === null || config.acme === null ? undefined : createAcmeMetrics(metrics.registry, { names: () => tls.list() }));
  const composed = compose({
    tls,
    acme,
    database,
    events,
    secretKey,
    passwordScryptN: config.passwordScryptN,
    logDirectory: join(dataDir, 'logs'),
    logStore: shared ? database.createLogStore() : undefined,
    ...schedulerSetup(config, schedulerKind, dataDir, logger),
    readyDetails: () => scheduling.readyDetails(),
    settings: config.settings,
    apiVersion: config.apiVersion,
    platformVersion: platformVersion(),
    trustProxy: config.trustProxy,
    corsAllowedOrigins: config.corsAllowedOrigins,
    allowedHosts: [...config.allowedHosts, ...configuredHost(config.host)],
    dashboardDirectory: config.dashboard ? dashboardDirectory() : null,
    platform: () => ({ apps: apps(), gitPort }),
    logger,
    git: git?.setup ?? null,
    imageBuilds: config.imageBuilds,
    buildpacks: { ...config.buildpacks, dataDir },
    registryLogin: config.registryLogin,
    shutdown: shutdown.signal,
    metrics: metrics === null ? null : { collector: metrics, token: config.metrics.token },
    router: {
      ...routerSetup(config),
      ...(routerMetrics === null
        ? {}
        : { observer: { request: (app: string | null, status: number, durationMs: number) => routerMetrics.observe({ app, status, durationSeconds: durationMs / 1000 }) } }),
    },
  });

  const { app, scheduler, processScheduler, dockerScheduler, swarmScheduler, useCases, gitServer, router, routeTable, deps } = composed;
  const stopProcesses = (): Promise<void> => scheduling.stop();

  try {
    await scheduling.beforeServing(composed);
  } catch (error) {
    await database.close();
    throw error;
  }
  // Sharing the database, a process that dies mid-deploy leaves a lease only another
  // process can clean up once it expires: look for such leases once per lease period.
  const sweep = shared ? setInterval(() => void sweepDeploys(useCases, logger), config.settings.deployLeaseSeconds * 1000) : null;
  sweep?.unref();
  const eventWorkers = startEventWorkers(useCases, config.events.webhookPollMs, logger);

  // Requests and responses are born with Express's prototypes: see httpServerOptions.
  // Keep-alive connections must not outlive the load balancer's idea of them (API_KEEP_ALIVE_TIMEOUT_MS).
  const server = createServer({ ...httpServerOptions(app), ...timeoutOptions(config.connections) }, app);
  limitConnections(server, config.connections, refusalLog(logger, 'API'));
  server.on('request', routeChangesOf(router, routeTable));
  let address: AddressInfo;
  try {
    address = await listen(server, config.port, config.host);
  } catch (error) {
    await stopProcesses();
    await database.close();
    throw error;
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  if (gitServer !== null && config.gitSshPort !== null) {
    try {
      gitPort = (await gitServer.listen(config.gitSshPort, config.gitSshHost)).port;
    } catch (error) {
      server.close();
      await gitServer.close(0);
      await stopProcesses();
      await database.close();
      throw error;
    }
    logger.info({ host: config.gitSshHost, port: gitPort, hostKey: git?.hostKey.fingerprint }, `git server listening on ssh://${config.gitSshHost}:${gitPort}`);
  }

  try {
    if (config.routerPort !== null) routerPort = (await router.listen(config.routerPort, config.routerHost)).port;
    if (config.routerTlsPort !== null) routerTlsPort = (await router.listenTls(config.routerTlsPort, config.routerHost)).port;
  } catch (error) {
    server.close();
    await router.close(0);
    await gitServer?.close(0);
    await stopProcesses();
    await database.close();
    throw error;
  }
  if (routerPort !== null || routerTlsPort !== null) {
    logger.info({ host: config.routerHost, port: routerPort, tlsPort: routerTlsPort }, `router listening on ${config.routerHost} (http ${routerPort ?? 'off'}, https ${routerTlsPort ?? 'off'})`);
  }

  // Every port of the controller is bound before any app code runs, so no app can take one.
  try {
    const bound = (ports: Array<number | null>): number[] => ports.filter((port): port is number => port !== null);
    await scheduling.afterPortsBound({ router: bound([routerPort, routerTlsPort]), own: bound([address.port, gitPort, routerPort, routerTlsPort, localDatabasePort(config.databaseUrl)]) });
    if (router.serve !== undefined) {
      // A router process of its own takes this controller's routes once the apps are up, then what an earlier one left goes.
      await router.serve();
      await scheduling.afterRoutesServed();
    } else {
      // The router read every route before it listened; the apps' processes that started again since listen elsewhere now.
      await router.routesChanged().catch(() => undefined);
    }
  } catch (error) {
    await stopProcesses();
    server.close();
    await router.close(0);
    await gitServer?.close(0);
    await database.close();
    throw error;
  }

  // Certificates follow apps and domains in the background; a new domain starts a round soon.
  const acmeRounds =
    acme === null || config.acme === null
      ? null
      : new AcmeRounds(deps, {
          holder: leaseHolder(),
          intervalMs: config.acme.intervalMs,
          logger,
          changed: () => {
            router.invalidateCertificate();
            routeTable.forget();
            router.routesChanged().catch(() => undefined);
          },
        });
  if (acmeRounds !== null) {
    server.on('request', acmeRoundsOnChanges(acmeRounds));
    acmeRounds.start();
    logger.info({ directory: config.acme?.directory }, 'automatic HTTPS on: certificates are obtained over ACME');
  }

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shutdown.abort();
      if (sweep !== null) clearInterval(sweep);
      await acmeRounds?.stop();
      events.journalSignal.close();
      await eventWorkers.stop();
      // The apps stop first (requests to them in flight finish as they handle SIGTERM): the
      // controller's ports are given up only once no app is left that could take one.
      await stopProcesses();
      // Pushes in flight may finish within the shutdown timeout, like HTTP requests.
      const gitClosed = gitServer?.close(config.shutdownTimeoutMs);
      const routerClosed = router.close(config.shutdownTimeoutMs);
      const drained = new Promise<void>((done) => server.close(() => done()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await drained;
      clearTimeout(timer);
      await gitClosed;
      await routerClosed;
      await database.close();
    })();
    return closing;
  };
  return { url, port: address.port, close, scheduler, processScheduler, dockerScheduler, swarmScheduler, schedulerKind, gitPort, routerPort, routerTlsPort, sandbox: scheduling.sandboxStatus, readiness: () => scheduling.readyDetails() };
}
