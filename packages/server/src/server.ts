import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Scheduler } from '@svc/core';
import { generateSecretKey } from '@svc/crypto-node';
import { httpServerOptions } from '@svc/http-express';
import { createDatabase, type Database } from '@svc/persistence-typeorm';
import type { ProcessScheduler } from '@svc/scheduler-process';
import { loadOrCreateHostKey, type HostKey } from '@svc/builder-git';
import { compose, type GitSetup, type PlatformRouter } from './composition';
import type { PlatformRouteTable } from './routing';
import type { ServerConfig } from './config';

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
  /** The port of the git SSH server (`git push` deploys); null when GIT_SSH_PORT is `off`. */
  gitPort: number | null;
  /** The router's HTTP port (app traffic); null when ROUTER_PORT is `off`. */
  routerPort: number | null;
  /** The router's HTTPS port; null when ROUTER_TLS_PORT is not set. */
  routerTlsPort: number | null;
}

/**
 * Where the git server keeps its repositories (`DATA_DIR/git`) and build directories
 * (`DATA_DIR/builds`), with the host key generated once in `DATA_DIR/ssh_host_ed25519_key`.
 */
function gitSetup(config: ServerConfig, dataDir: string, routerPort: () => number | null): { setup: GitSetup; hostKey: HostKey } {
  const hostKey = loadOrCreateHostKey(join(dataDir, 'ssh_host_ed25519_key'));
  const domain = config.settings.platformDomain;
  return {
    hostKey,
    setup: {
      repositories: join(dataDir, 'git'),
      builds: join(dataDir, 'builds'),
      hostKey: hostKey.privateKey,
      // Shown to the pusher once the app is released: where the router answers for it.
      appUrl: (appId) => {
        const port = routerPort();
        return port === null ? null : `http://${appId}.${domain}${port === 80 ? '' : `:${port}`}`;
      },
    },
  };
}

/** The platform version announced in response headers: this package's version. */
export function platformVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * The secret that seals private keys: the configured one, or outside production one
 * generated on first start and kept (mode 0600) in the data directory.
 */
export function resolveSecretKey(config: ServerConfig, logger: Logger): string {
  if (config.secretKey !== null) return config.secretKey;
  const file = join(config.dataDir, 'secret_key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = generateSecretKey();
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  logger.warn({ file }, 'SECRET_KEY is not set: generated one and stored it in the data directory; set SECRET_KEY in production');
  return secret;
}

/**
 * With a shared database and no SECRET_KEY, the key is kept in the database so that every
 * controller process seals with the same one; the first process stores the key it finds in
 * its data directory (from an earlier start) or a new one.
 */
async function sharedSecretKey(database: Database, dataDir: string, logger: Logger): Promise<string> {
  const file = join(dataDir, 'secret_key');
  const secret = await database.sharedSecret('secret_key', () => (existsSync(file) ? readFileSync(file, 'utf8').trim() : generateSecretKey()));
  logger.warn('SECRET_KEY is not set: using the key generated and stored in the database; set SECRET_KEY in production');
  return secret;
}

/**
 * Watches the API's requests: once one that may change routes (any write to an app, its
 * domains, formation or releases, or to certificates) has been answered, the router looks
 * its routes up again (several in a row make one refresh) instead of waiting for its
 * periodic refresh.
 */
function routeChangesOf(router: PlatformRouter, routeTable: PlatformRouteTable): (req: IncomingMessage, res: ServerResponse) => void {
  let scheduled: ReturnType<typeof setTimeout> | null = null;
  const refresh = (): void => {
    scheduled = null;
    routeTable.forget();
    router.routesChanged().catch(() => undefined);
  };
  return (req, res) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    const path = req.url ?? '';
    const certificates = path.includes('/certs');
    if (!certificates && !path.includes('/apps')) return;
    res.once('finish', () => {
      if (res.statusCode >= 400) return;
      if (certificates) router.invalidateCertificate();
      scheduled ??= setTimeout(refresh, 0);
    });
  };
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

/** Starts the controller: database (migrated), composition, HTTP listener. */
export async function startServer(config: ServerConfig, logger: Logger): Promise<RunningServer> {
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

  // Set once the router listens; the git server shows pushers the app's address on it.
  let routerPort: number | null = null;
  const git = config.gitSshPort === null ? null : gitSetup(config, dataDir, () => routerPort);
  // Ends log follow streams at shutdown: they would otherwise hold the stop up to its timeout.
  const shutdown = new AbortController();
  const { app, scheduler, processScheduler, useCases, gitServer, router, routeTable } = compose({
    database,
    secretKey,
    logDirectory: join(dataDir, 'logs'),
    logStore: shared ? database.createLogStore() : undefined,
    scheduler: config.scheduler,
    processes: {
      dataDir,
      portRange: config.processes.portRange,
      startTimeoutMs: config.processes.healthcheckTimeoutMs,
      stopTimeoutMs: config.processes.stopTimeoutMs,
    },
    schedulerChaos: config.schedulerChaos,
    settings: config.settings,
    apiVersion: config.apiVersion,
    platformVersion: platformVersion(),
    trustProxy: config.trustProxy,
    logger,
    git: git?.setup ?? null,
    shutdown: shutdown.signal,
    router: {
      workers: config.router.workers,
      routeRefreshMs: config.router.routeRefreshMs,
      accessLogSample: config.router.accessLogSample,
      limits: {
        maxConnections: config.router.maxConnections,
        maxConnectionsPerClient: config.router.maxConnectionsPerClient,
        headersTimeoutMs: config.router.headersTimeoutMs,
        idleTimeoutMs: config.router.idleTimeoutMs,
      },
      upstream: {
        maxSockets: config.router.upstreamMaxSockets,
        maxIdleSockets: config.router.upstreamIdleSockets,
        idleTimeoutMs: config.router.upstreamIdleTimeoutMs,
      },
      logLevel: config.logLevel,
    },
  });

  const stopProcesses = async (): Promise<void> => {
    await processScheduler?.shutdown();
  };
  if (processScheduler !== null) {
    // The apps' processes did not survive the previous controller process: start them again.
    try {
      const reaped = await processScheduler.reapOrphans();
      if (reaped > 0) logger.warn({ reaped }, 'stopped app processes left running by an earlier controller process');
      const { restored } = await useCases.restoreContainers.execute();
      logger.info({ restored }, 'restored the apps\' containers');
    } catch (error) {
      await stopProcesses();
      await database.close();
      throw error;
    }
  }

  // Requests and responses are born with Express's prototypes: see httpServerOptions.
  const server = createServer(httpServerOptions(app), app);
  server.on('request', routeChangesOf(router, routeTable));
  // Keep-alive connections must not outlive the load balancer's idea of them.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
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

  let gitPort: number | null = null;
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

  let routerTlsPort: number | null = null;
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

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shutdown.abort();
      // Pushes in flight may finish within the shutdown timeout, like HTTP requests.
      const gitClosed = gitServer?.close(config.shutdownTimeoutMs);
      // App requests in flight finish before the processes answering them are stopped.
      const routerClosed = router.close(config.shutdownTimeoutMs);
      const drained = new Promise<void>((done) => server.close(() => done()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await drained;
      clearTimeout(timer);
      await gitClosed;
      await routerClosed;
      await stopProcesses();
      await database.close();
    })();
    return closing;
  };
  return { url, port: address.port, close, scheduler, processScheduler, gitPort, routerPort, routerTlsPort };
}
