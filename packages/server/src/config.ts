import { API_VERSIONS, DEFAULT_SETTINGS, type ApiVersion, type RegistrationMode, type Settings } from '@svc/core';
import { availableParallelism } from 'node:os';
import { parseChaosSpec, type ChaosOptions } from '@svc/scheduler-chaos';

/** Which scheduler runs containers. */
export type SchedulerKind = 'process' | 'memory';

/** How the process scheduler runs apps (SCHEDULER=process). */
export interface ProcessSettings {
  /** PROCESS_PORT_RANGE: the ports handed to processes as PORT. */
  portRange: { from: number; to: number };
  /** HEALTHCHECK_TIMEOUT: how long a web process has to come up, in milliseconds. */
  healthcheckTimeoutMs: number;
  /** PROCESS_STOP_TIMEOUT_SECONDS: SIGTERM to SIGKILL, in milliseconds. */
  stopTimeoutMs: number;
}

/** How the router runs (ROUTER_* settings). */
export interface RouterSettings {
  /** ROUTER_WORKERS: worker processes (`auto`: one per core); 0 runs the router on the controller's event loop. */
  workers: number;
  /** ROUTER_ROUTE_REFRESH_MS: how often the routes in use are looked up again. */
  routeRefreshMs: number;
  /** ROUTER_MAX_CONNECTIONS: client connections at most, in all. */
  maxConnections: number;
  /** ROUTER_MAX_CONNECTIONS_PER_CLIENT: client connections at most from one address. */
  maxConnectionsPerClient: number;
  /** ROUTER_HEADERS_TIMEOUT_MS: TLS handshake and request headers must arrive within this. */
  headersTimeoutMs: number;
  /** ROUTER_IDLE_TIMEOUT_MS: a client connection quiet for this long is closed. */
  idleTimeoutMs: number;
  /** ROUTER_UPSTREAM_MAX_SOCKETS: connections to one app process at most. */
  upstreamMaxSockets: number;
  /** ROUTER_UPSTREAM_IDLE_SOCKETS: idle connections kept per app process. */
  upstreamIdleSockets: number;
  /** ROUTER_UPSTREAM_IDLE_TIMEOUT_MS: an idle kept connection to a process is closed after this. */
  upstreamIdleTimeoutMs: number;
  /** ROUTER_ACCESS_LOG_SAMPLE: the share of requests written to the access log, 0 to 1. */
  accessLogSample: number;
}

/** Everything the server reads from its environment, validated. */
export interface ServerConfig {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  dbPoolSize: number;
  dbStatementTimeoutMs: number;
  dbConnectRetries: number;
  scheduler: SchedulerKind;
  processes: ProcessSettings;
  /** Fault injection around the scheduler (`SCHEDULER_CHAOS`); null when off. */
  schedulerChaos: ChaosOptions | null;
  apiVersion: ApiVersion;
  /** Null when not configured: outside production one is generated and kept in the data directory. */
  secretKey: string | null;
  production: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  trustProxy: boolean;
  shutdownTimeoutMs: number;
  /** The git SSH server's port (`GIT_SSH_PORT`, 0 = any free port); null when it is off. */
  gitSshPort: number | null;
  /** The git SSH server's listening address (`GIT_SSH_HOST`, default `HOST`). */
  gitSshHost: string;
  /** The router's HTTP port (`ROUTER_PORT`, 0 = any free port); null when it is off. */
  routerPort: number | null;
  /** The router's listening address (`ROUTER_HOST`, default `HOST`). */
  routerHost: string;
  /** The router's HTTPS port (`ROUTER_TLS_PORT`, 0 = any free port); null when unset. */
  routerTlsPort: number | null;
  router: RouterSettings;
  settings: Settings;
}

/** A configuration value that cannot be used; the message names the variable. */
export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value.trim() === '' ? fallback : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^[0-9]+$/.test(raw.trim())) throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}, got ${value}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const value = text(env, name, fallback);
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const value = text(env, name, fallback ? 'true' : 'false').toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got "${value}"`);
}

/** `SCHEDULER_CHAOS`, e.g. `start=0.2,stop=0.1,run=0.5,seed=42`; unset or empty means off. */
function chaos(env: Env): ChaosOptions | null {
  const value = env.SCHEDULER_CHAOS?.trim();
  if (value === undefined || value === '') return null;
  try {
    return parseChaosSpec(value);
  } catch (error) {
    throw new ConfigError('SCHEDULER_CHAOS', error instanceof Error ? error.message : String(error));
  }
}

/** `GIT_SSH_PORT`: a port (0 = any free one), or `off` to run no git server. */
function gitSshPort(env: Env): number | null {
  return text(env, 'GIT_SSH_PORT', '').toLowerCase() === 'off' ? null : integer(env, 'GIT_SSH_PORT', 2222, 0, 65535);
}

/** `ROUTER_PORT`: default 8080, `off` for no router. */
function routerPort(env: Env): number | null {
  return text(env, 'ROUTER_PORT', '').toLowerCase() === 'off' ? null : integer(env, 'ROUTER_PORT', 8080, 0, 65535);
}

/** `ROUTER_WORKERS`: `auto` (default, one per core) or 0 to 256. */
function routerWorkers(env: Env): number {
  const value = text(env, 'ROUTER_WORKERS', 'auto').toLowerCase();
  return value === 'auto' ? Math.max(1, availableParallelism()) : integer(env, 'ROUTER_WORKERS', 0, 0, 256);
}

/** `ROUTER_ACCESS_LOG_SAMPLE`: a number from 0 to 1, default 1. */
function sample(env: Env): number {
  const value = text(env, 'ROUTER_ACCESS_LOG_SAMPLE', '1');
  const parsed = Number(value);
  if (value === '' || !Number.isFinite(parsed) || parsed < 0 || parsed > 1) throw new ConfigError('ROUTER_ACCESS_LOG_SAMPLE', `must be a number from 0 to 1, got "${value}"`);
  return parsed;
}

/** The ROUTER_* settings of how the router runs. */
function routerSettings(env: Env): RouterSettings {
  return {
    workers: routerWorkers(env),
    routeRefreshMs: integer(env, 'ROUTER_ROUTE_REFRESH_MS', 1000, 100, 600_000),
    maxConnections: integer(env, 'ROUTER_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    maxConnectionsPerClient: integer(env, 'ROUTER_MAX_CONNECTIONS_PER_CLIENT', 256, 1, 1_000_000),
    headersTimeoutMs: integer(env, 'ROUTER_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    idleTimeoutMs: integer(env, 'ROUTER_IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000),
    upstreamMaxSockets: integer(env, 'ROUTER_UPSTREAM_MAX_SOCKETS', 512, 1, 100_000),
    upstreamIdleSockets: integer(env, 'ROUTER_UPSTREAM_IDLE_SOCKETS', 128, 0, 100_000),
    upstreamIdleTimeoutMs: integer(env, 'ROUTER_UPSTREAM_IDLE_TIMEOUT_MS', 4000, 100, 600_000),
    accessLogSample: sample(env),
  };
}

/** `ROUTER_TLS_PORT`: unset (or `off`) for no HTTPS listener. */
function routerTlsPort(env: Env): number | null {
  const value = text(env, 'ROUTER_TLS_PORT', '').toLowerCase();
  return value === '' || value === 'off' ? null : integer(env, 'ROUTER_TLS_PORT', 0, 0, 65535);
}

/** `PROCESS_PORT_RANGE`: `<from>-<to>`, both ends included. */
function portRange(env: Env): { from: number; to: number } {
  const value = text(env, 'PROCESS_PORT_RANGE', '20000-29999');
  const match = /^([0-9]{1,5})\s*-\s*([0-9]{1,5})$/.exec(value);
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (!match || from < 1 || to > 65535 || from > to) {
    throw new ConfigError('PROCESS_PORT_RANGE', `must be two ports from 1 to 65535 such as 20000-29999, got "${value}"`);
  }
  return { from, to };
}

const HOSTNAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/**
 * Reads and validates the configuration once, at start-up.
 * @throws ConfigError naming the first variable with a bad value.
 */
export function loadConfig(env: Env = process.env): ServerConfig {
  const production = text(env, 'NODE_ENV', 'development') === 'production';
  const databaseUrl = env.DATABASE_URL?.trim() ? env.DATABASE_URL.trim() : null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL (leave it unset for the embedded SQLite database)');
  }
  const secretKey = env.SECRET_KEY?.trim() ? env.SECRET_KEY.trim() : null;
  if (secretKey === null && production) throw new ConfigError('SECRET_KEY', 'is required when NODE_ENV=production');
  if (secretKey !== null && secretKey.length < 32) throw new ConfigError('SECRET_KEY', 'must be at least 32 characters');

  const platformDomain = text(env, 'PLATFORM_DOMAIN', DEFAULT_SETTINGS.platformDomain).toLowerCase();
  if (!HOSTNAME.test(platformDomain)) throw new ConfigError('PLATFORM_DOMAIN', `is not a valid domain name: "${platformDomain}"`);
  const reserved = text(env, 'RESERVED_APP_NAMES', DEFAULT_SETTINGS.reservedAppNames.join(','))
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  const ttl = integer(env, 'TOKEN_TTL_SECONDS', 0, 0, 10 * 365 * 24 * 3600);

  const settings: Settings = {
    platformDomain,
    reservedAppNames: reserved,
    registrationMode: oneOf<RegistrationMode>(env, 'REGISTRATION_MODE', 'enabled', ['enabled', 'disabled', 'admin_only']),
    tokenTtlSeconds: ttl === 0 ? null : ttl,
    scaleMaxPerType: integer(env, 'SCALE_MAX_PER_TYPE', DEFAULT_SETTINGS.scaleMaxPerType, 1, 10000),
    runTimeoutSeconds: integer(env, 'RUN_TIMEOUT_SECONDS', DEFAULT_SETTINGS.runTimeoutSeconds, 1, 24 * 3600),
    runOutputLimitBytes: integer(env, 'RUN_OUTPUT_LIMIT', DEFAULT_SETTINGS.runOutputLimitBytes, 1024, 64 * 1024 * 1024),
    loginFailureLimit: DEFAULT_SETTINGS.loginFailureLimit,
    loginFailureWindowSeconds: DEFAULT_SETTINGS.loginFailureWindowSeconds,
    buildRetention: integer(env, 'BUILD_RETENTION', DEFAULT_SETTINGS.buildRetention, 1, 1000),
  };

  return {
    port: integer(env, 'PORT', 8000, 0, 65535),
    host: text(env, 'HOST', '127.0.0.1'),
    dataDir: text(env, 'DATA_DIR', './data'),
    databaseUrl,
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 500),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 30000, 0, 3600000),
    dbConnectRetries: integer(env, 'DB_CONNECT_RETRIES', 10, 0, 1000),
    scheduler: oneOf<SchedulerKind>(env, 'SCHEDULER', 'process', ['process', 'memory']),
    processes: {
      portRange: portRange(env),
      healthcheckTimeoutMs: integer(env, 'HEALTHCHECK_TIMEOUT', 30, 1, 3600) * 1000,
      stopTimeoutMs: integer(env, 'PROCESS_STOP_TIMEOUT_SECONDS', 10, 0, 600) * 1000,
    },
    schedulerChaos: chaos(env),
    apiVersion: oneOf<ApiVersion>(env, 'SVC_API_VERSION', '1.7', API_VERSIONS),
    secretKey,
    production,
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    trustProxy: flag(env, 'TRUST_PROXY', false),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10000, 0, 600000),
    gitSshPort: gitSshPort(env),
    gitSshHost: text(env, 'GIT_SSH_HOST', text(env, 'HOST', '127.0.0.1')),
    routerPort: routerPort(env),
    routerHost: text(env, 'ROUTER_HOST', text(env, 'HOST', '127.0.0.1')),
    routerTlsPort: routerTlsPort(env),
    router: routerSettings(env),
    settings,
  };
}
