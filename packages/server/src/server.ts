import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { generateSecretKey } from '@svc/crypto-node';
import { createDatabase, type Database } from '@svc/persistence-typeorm';
import { compose } from './composition';
import type { ServerConfig } from './config';

/** A started controller. */
export interface RunningServer {
  /** e.g. `http://127.0.0.1:8000` */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to the shutdown timeout), closes the database. */
  close(): Promise<void>;
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

  const { app } = compose({
    database,
    secretKey,
    logDirectory: join(dataDir, 'logs'),
    logStore: shared ? database.createLogStore() : undefined,
    scheduler: config.scheduler,
    settings: config.settings,
    apiVersion: config.apiVersion,
    platformVersion: platformVersion(),
    trustProxy: config.trustProxy,
    logger,
  });

  const server = createServer(app);
  // Keep-alive connections must not outlive the load balancer's idea of them.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const address = await listen(server, config.port, config.host);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const drained = new Promise<void>((done) => server.close(() => done()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await drained;
      clearTimeout(timer);
      await database.close();
    })();
    return closing;
  };
  return { url, port: address.port, close };
}
