import { API_VERSIONS, DEFAULT_RUNS_PER_USER, DEFAULT_SETTINGS, type ApiVersion, type BuildDestination, type RegistrationMode, type Settings } from '@svc/core';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseChaosSpec, type ChaosOptions } from '@svc/scheduler-chaos';
import type { SandboxOptions } from '@svc/scheduler-process';
import type { RegistryLogin } from '@svc/scheduler-docker';
import { buildpackSettings, buildpackUrlAllow, type BuildpackSettings } from './config-buildpacks';
import { acmeConfig, type AcmeConfig } from './config-acme';
import { appsUrlSettings, type AppsUrlSettings } from './config-public';
import { eventCoreSettings, eventSettings, type EventSettings } from './config-events';
import { ConfigError, flag, integer, list, oneOf, powerOfTwo, text, type Env } from './config-values';
import {
  defaultCpu,
  defaultMemory,
  docker,
  imageBuilds,
  registryLogin,
  registrySetting,
  swarm,
  type DockerSettings,
  type ImageBuildSettings,
  type SwarmSettings,
} from './config-engines';

export { ConfigError } from './config-values';
export type { DockerSettings, ImageBuildSettings, SwarmSettings } from './config-engines';

/** Which scheduler runs containers. */
export type SchedulerKind = 'process' | 'memory' | 'docker' | 'swarm';

/** How the process scheduler runs apps (SCHEDULER=process). */
export interface ProcessSettings {
  /** PROCESS_PORT_RANGE: the ports handed to processes as PORT. */
  portRange: { from: number; to: number };
  /** HEALTHCHECK_TIMEOUT: how long a web process has to come up, in milliseconds. */
  healthcheckTimeoutMs: number;
  /** PROCESS_STOP_TIMEOUT_SECONDS: SIGTERM to SIGKILL, in milliseconds. */
  stopTimeoutMs: number;
  /**
   * How apps are confined (SANDBOX_*); null when UNSAFE_SINGLE_USER_DEV is set: apps then run
   * unconfined as the controller's user.
   */
  sandbox: SandboxOptions | null;
}
/** The variable that lets apps run unconfined, for one trusted developer on their own machine. */
export const UNSAFE_SWITCH = 'UNSAFE_SINGLE_USER_DEV';
/** How many connections the API server takes, and how long it waits for slow or idle ones. */
export interface ConnectionLimits {
  /** API_MAX_CONNECTIONS: open connections in all. */
  maxConnections: number;
  /** API_MAX_CONNECTIONS_PER_ADDRESS: open connections from one client address (an IPv6 /64 counts as one). */
  maxConnectionsPerAddress: number;
  /** API_CONNECTIONS_RESERVED: the last places of the total, only for clients holding no connection yet. */
  reservedConnections: number;
  /** API_HEADERS_TIMEOUT_MS: time to receive a request's headers. */
  headersTimeoutMs: number;
  /** API_REQUEST_TIMEOUT_MS: time to receive a whole request (not to answer it). */
  requestTimeoutMs: number;
  /** API_KEEP_ALIVE_TIMEOUT_MS: how long an idle keep-alive connection is kept. */
  keepAliveTimeoutMs: number;
}

/** How many connections the git SSH server takes. */
export interface GitConnectionLimits {
  /** GIT_SSH_MAX_CONNECTIONS */
  maxConnections: number;
  /** GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS */
  maxConnectionsPerAddress: number;
  /** GIT_SSH_CONNECTIONS_RESERVED: the last places of the total, only for clients holding no connection yet. */
  reservedConnections: number;
  /** GIT_SSH_AUTH_TIMEOUT_MS: time from connecting to being authenticated. */
  authTimeoutMs: number;
}

/** How the router runs (ROUTER_* settings). */
export interface RouterSettings {
  /** ROUTER_WORKERS: worker processes (`auto`: one per core); 0 runs the router on the controller's event loop. */
  workers: number;
  /** ROUTER_ROUTE_REFRESH_MS: how often the routes in use are looked up again. */
  routeRefreshMs: number;
  /** ROUTER_MAX_CONNECTIONS: client connections at most, in all. */
  maxConnections: number;
  /** ROUTER_MAX_CONNECTIONS_PER_CLIENT: client connections at most from one client (an IPv4 address, an IPv6 /64). */
  maxConnectionsPerClient: number;
  /** ROUTER_CONNECTIONS_RESERVED: the last places of the total, only for clients holding no connection yet. */
  reservedConnections: number;
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
  /** ROUTER_SOCKET: the control socket of the router as a process of its own (`npm run start:router`); null: the controller runs the router. */
  socket: string | null;
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
  /** `SCHEDULER`; `auto` when unset: docker when an engine answers at DOCKER_HOST, else process. */
  scheduler: SchedulerKind | 'auto';
  /** `SCHEDULER_ADOPT`: start the apps another scheduler ran in this data directory (preflight.ts). */
  schedulerAdopt: boolean;
  processes: ProcessSettings;
  docker: DockerSettings;
  swarm: SwarmSettings;
  /** Fault injection around the scheduler (`SCHEDULER_CHAOS`); null when off. */
  schedulerChaos: ChaosOptions | null;
  apiVersion: ApiVersion;
  /** Null when not configured: outside production one is generated and kept in the data directory. */
  secretKey: string | null;
  /**
   * PASSWORD_SCRYPT_N: scrypt's CPU and memory cost for new password hashes, a power of two from
   * 1024 to 1048576 (default 16384). Stored hashes keep the cost they were made with.
   */
  passwordScryptN: number;
  production: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  trustProxy: boolean;
  /** CORS_ALLOWED_ORIGINS: origins whose pages may call the API (`*`: any); empty: none. */
  corsAllowedOrigins: string[];
  /** ALLOWED_HOSTS: host names the API answers besides IP addresses, localhost and the platform domain. */
  allowedHosts: string[];
  /** DASHBOARD: whether the web dashboard is served at `/dashboard/` on the API's origin (default on). */
  dashboard: boolean;
  connections: ConnectionLimits;
  gitConnections: GitConnectionLimits;
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
  /** Where clients reach the apps when not at the router's own scheme and port (APPS_URL_SCHEME, APPS_URL_PORT). */
  appsUrl: AppsUrlSettings;
  /** `GET /metrics` on the API port (`METRICS`, default on), and the bearer token it requires (`METRICS_TOKEN`; null: none). */
  metrics: { enabled: boolean; token: string | null };
  router: RouterSettings;
  settings: Settings;
  /** How pushed commits become images; null: they run from their checkout. */
  imageBuilds: ImageBuildSettings | null;
  /** BUILDPACKS_DIR and BUILD_CACHE_LIMIT_MB, for the buildpack compiler and catalog (BUILDPACK_URL_ALLOW is in `settings`). */
  buildpacks: BuildpackSettings;
  /** WEBHOOK_ALLOWED_HOSTS, WEBHOOK_TIMEOUT_SECONDS, WEBHOOK_POLL_SECONDS (the journal's core settings are in `settings`). */
  events: EventSettings;
  /** REGISTRY with REGISTRY_USERNAME and REGISTRY_PASSWORD: the login sent with the registry's images only; null: none. */
  registryLogin: RegistryLogin | null;
  /** Automatic HTTPS over ACME (ACME_DIRECTORY_URL and the other ACME_* settings); null: off. */
  acme: AcmeConfig | null;
}

/** The variables of one server's connection caps: in all, per client address, reserved. */
interface CapVariables {
  total: string;
  perAddress: string;
  reserved: string;
}

/**
 * The connection caps of one server (the API's, the git server's): by default half the total
 * is reserved for clients that hold no connection yet, so that filling it takes one address per place.
 */
function connectionCaps(
  env: Env,
  names: CapVariables,
  total: number,
  perAddress: number,
): Pick<ConnectionLimits, 'maxConnections' | 'maxConnectionsPerAddress' | 'reservedConnections'> {
  const maxConnections = integer(env, names.total, total, 1, 1_000_000);
  return {
    maxConnections,
    maxConnectionsPerAddress: integer(env, names.perAddress, perAddress, 1, 1_000_000),
    reservedConnections: integer(env, names.reserved, Math.floor(maxConnections / 2), 0, maxConnections - 1),
  };
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
  const workers = routerWorkers(env);
  const routeRefreshMs = integer(env, 'ROUTER_ROUTE_REFRESH_MS', 1000, 100, 600_000);
  const caps = connectionCaps(env, { total: 'ROUTER_MAX_CONNECTIONS', perAddress: 'ROUTER_MAX_CONNECTIONS_PER_CLIENT', reserved: 'ROUTER_CONNECTIONS_RESERVED' }, 10_000, 256);
  return {
    workers,
    routeRefreshMs,
    maxConnections: caps.maxConnections,
    maxConnectionsPerClient: caps.maxConnectionsPerAddress,
    reservedConnections: caps.reservedConnections,
    headersTimeoutMs: integer(env, 'ROUTER_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    idleTimeoutMs: integer(env, 'ROUTER_IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000),
    upstreamMaxSockets: integer(env, 'ROUTER_UPSTREAM_MAX_SOCKETS', 512, 1, 100_000),
    upstreamIdleSockets: integer(env, 'ROUTER_UPSTREAM_IDLE_SOCKETS', 128, 0, 100_000),
    upstreamIdleTimeoutMs: integer(env, 'ROUTER_UPSTREAM_IDLE_TIMEOUT_MS', 4000, 100, 600_000),
    accessLogSample: sample(env),
    socket: routerSocket(env),
  };
}

/** `ROUTER_SOCKET`: unset for a router run by the controller; else the path of the router process's control socket, made absolute. */
function routerSocket(env: Env): string | null {
  const value = text(env, 'ROUTER_SOCKET', '');
  if (value === '') return null;
  const path = resolve(value);
  // The kernel's limit on the path of a Unix socket (108 bytes with its terminating zero on Linux).
  if (Buffer.byteLength(path) > 100) throw new ConfigError('ROUTER_SOCKET', `the path ${path} is too long for a Unix socket (100 bytes at most): choose a shorter one`);
  return path;
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

/** `SANDBOX_UID_RANGE`: `<from>-<to>`, the user ids handed to apps. */
function uidRange(env: Env): { from: number; to: number } {
  const value = text(env, 'SANDBOX_UID_RANGE', '200000-265535');
  const match = /^([0-9]{1,10})\s*-\s*([0-9]{1,10})$/.exec(value);
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (!match || from < 1000 || to > 4294967294 || from > to) {
    throw new ConfigError('SANDBOX_UID_RANGE', `must be two user ids from 1000 up such as 200000-265535, got "${value}"`);
  }
  return { from, to };
}

/** `SANDBOX_READ_ONLY_PATHS`: absolute host paths, separated by `:`, shown read-only to apps. */
function readOnlyPaths(env: Env): string[] {
  const paths = text(env, 'SANDBOX_READ_ONLY_PATHS', '')
    .split(':')
    .map((path) => path.trim())
    .filter((path) => path !== '');
  for (const path of paths) {
    if (!path.startsWith('/') || path.split('/').includes('..')) throw new ConfigError('SANDBOX_READ_ONLY_PATHS', `must be absolute paths separated by ":", got "${path}"`);
  }
  return paths;
}

/** The confinement of apps, or null when the operator switched it off; its build steps reach `buildAllowed` too (BUILD_NETWORK_ALLOW). */
function sandbox(env: Env, buildAllowed: BuildDestination[]): SandboxOptions | null {
  if (flag(env, UNSAFE_SWITCH, false)) return null;
  return {
    uidRange: uidRange(env),
    maxProcesses: integer(env, 'SANDBOX_MAX_PROCESSES', 512, 16, 1_000_000),
    maxOpenFiles: integer(env, 'SANDBOX_MAX_OPEN_FILES', 1024, 64, 1_048_576),
    maxFileBytes: integer(env, 'SANDBOX_MAX_FILE_SIZE', 1024 ** 3, 1024, Number.MAX_SAFE_INTEGER),
    tmpBytes: integer(env, 'SANDBOX_TMP_SIZE', 64 * 1024 ** 2, 1024 * 1024, Number.MAX_SAFE_INTEGER),
    readOnlyPaths: readOnlyPaths(env),
    bwrap: text(env, 'SANDBOX_BWRAP', 'bwrap'),
    // The same meaning and form as DOCKER_DEFAULT_MEMORY and DOCKER_DEFAULT_CPU, for the sandbox's cgroups.
    defaultMemory: defaultMemory(env, 'SANDBOX_DEFAULT_MEMORY'),
    defaultCpu: defaultCpu(env, 'SANDBOX_DEFAULT_CPU'),
    // Build steps in the sandbox reach what builds on an engine reach.
    buildAllowed,
  };
}

/** `CORS_ALLOWED_ORIGINS`: `*`, or origins such as `https://ui.example.com` (scheme, host, optional port). */
function corsOrigins(env: Env): string[] {
  const origins = list(env, 'CORS_ALLOWED_ORIGINS');
  for (const origin of origins) {
    if (origin === '*') continue;
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = null;
    }
    if (parsed === null || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin.toLowerCase().replace(/\/$/, '')) {
      throw new ConfigError('CORS_ALLOWED_ORIGINS', `must be * or origins such as https://ui.example.com, got "${origin}"`);
    }
  }
  return origins.map((origin) => (origin === '*' ? origin : new URL(origin).origin));
}

/** `ALLOWED_HOSTS`: host names, `.example.com` for example.com and every name under it. */
function allowedHosts(env: Env): string[] {
  const hosts = list(env, 'ALLOWED_HOSTS').map((host) => host.toLowerCase());
  for (const host of hosts) {
    if (!HOSTNAME.test(host.startsWith('.') ? host.slice(1) : host)) {
      throw new ConfigError('ALLOWED_HOSTS', `must be host names such as svc.example.com or .example.com, got "${host}"`);
    }
  }
  return hosts;
}

/** A comma-separated list; blank items are dropped. */
/** `METRICS` (on by default) and `METRICS_TOKEN` (unset: no token is asked for). */
function metrics(env: Env): { enabled: boolean; token: string | null } {
  const enabled = flag(env, 'METRICS', true);
  const token = env.METRICS_TOKEN?.trim() ? env.METRICS_TOKEN.trim() : null;
  if (token !== null && (token.length < 16 || /\s/.test(token))) {
    throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters without spaces');
  }
  return { enabled, token };
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
  const registry = registrySetting(env);
  const buildpacks = buildpackSettings(env, (name, fallback, min, max) => integer(env, name, fallback, min, max));
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
  const window = integer(env, 'LOGIN_FAILURE_WINDOW_SECONDS', DEFAULT_SETTINGS.loginFailureWindowSeconds, 1, 7 * 24 * 3600);
  const quotas = DEFAULT_SETTINGS.quotas;

  const settings: Settings = {
    platformDomain,
    reservedAppNames: reserved,
    registrationMode: oneOf<RegistrationMode>(env, 'REGISTRATION_MODE', 'enabled', ['enabled', 'disabled', 'admin_only']),
    tokenTtlSeconds: ttl === 0 ? null : ttl,
    scaleMaxPerType: integer(env, 'SCALE_MAX_PER_TYPE', DEFAULT_SETTINGS.scaleMaxPerType, 1, 10000),
    runTimeoutSeconds: integer(env, 'RUN_TIMEOUT_SECONDS', DEFAULT_SETTINGS.runTimeoutSeconds, 1, 24 * 3600),
    runOutputLimitBytes: integer(env, 'RUN_OUTPUT_LIMIT', DEFAULT_SETTINGS.runOutputLimitBytes, 1024, 64 * 1024 * 1024),
    loginFailureLimit: integer(env, 'LOGIN_FAILURE_LIMIT', DEFAULT_SETTINGS.loginFailureLimit, 1, 10000),
    loginFailureWindowSeconds: window,
    loginBackoffSeconds: integer(env, 'LOGIN_BACKOFF_SECONDS', DEFAULT_SETTINGS.loginBackoffSeconds, 1, window),
    loginBackoffMaxSeconds: integer(env, 'LOGIN_BACKOFF_MAX_SECONDS', Math.min(DEFAULT_SETTINGS.loginBackoffMaxSeconds, window), 1, window),
    loginUsernameFailureLimit: integer(env, 'LOGIN_USERNAME_FAILURE_LIMIT', DEFAULT_SETTINGS.loginUsernameFailureLimit, 1, 1_000_000),
    logFollowersPerUser: integer(env, 'LOG_FOLLOWERS_PER_USER', DEFAULT_SETTINGS.logFollowersPerUser, 1, 100_000),
    logFollowersTotal: integer(env, 'LOG_FOLLOWERS_TOTAL', DEFAULT_SETTINGS.logFollowersTotal, 1, 1_000_000),
    quotas: {
      appsPerUser: integer(env, 'QUOTA_APPS_PER_USER', quotas.appsPerUser, 1, 1_000_000),
      processTypesPerApp: integer(env, 'QUOTA_PROCESS_TYPES_PER_APP', quotas.processTypesPerApp, 1, 10_000),
      processesPerApp: integer(env, 'QUOTA_PROCESSES_PER_APP', quotas.processesPerApp, 1, 1_000_000),
      processesPerUser: integer(env, 'QUOTA_PROCESSES_PER_USER', quotas.processesPerUser, 1, 1_000_000),
      configBytes: integer(env, 'QUOTA_CONFIG_BYTES', quotas.configBytes, 1, 64 * 1024 * 1024),
      domainsPerApp: integer(env, 'QUOTA_DOMAINS_PER_APP', quotas.domainsPerApp, 1, 1_000_000),
    },
    buildRetention: integer(env, 'BUILD_RETENTION', DEFAULT_SETTINGS.buildRetention, 1, 1000),
    buildsPerUser: integer(env, 'QUOTA_BUILDS_PER_USER', DEFAULT_SETTINGS.buildsPerUser, 1, 10_000),
    runsPerUser: integer(env, 'QUOTA_RUNS_PER_USER', DEFAULT_SETTINGS.runsPerUser ?? DEFAULT_RUNS_PER_USER, 1, 10_000),
    deployLeaseSeconds: integer(env, 'DEPLOY_LEASE_SECONDS', DEFAULT_SETTINGS.deployLeaseSeconds, 3, 3600),
    buildpackUrlAllow: buildpackUrlAllow(env),
    releasePhaseTimeoutSeconds: integer(env, 'RELEASE_PHASE_TIMEOUT_SECONDS', DEFAULT_SETTINGS.releasePhaseTimeoutSeconds, 1, 24 * 3600),
    ...eventCoreSettings((name, fallback, min, max) => integer(env, name, fallback, min, max)),
  };

  return {
    port: integer(env, 'PORT', 8000, 0, 65535),
    host: text(env, 'HOST', '127.0.0.1'),
    dataDir: text(env, 'DATA_DIR', './data'),
    databaseUrl,
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 500),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 30000, 0, 3600000),
    dbConnectRetries: integer(env, 'DB_CONNECT_RETRIES', 10, 0, 1000),
    scheduler: oneOf<SchedulerKind | 'auto'>(env, 'SCHEDULER', 'auto', ['auto', 'process', 'docker', 'swarm', 'memory']),
    schedulerAdopt: flag(env, 'SCHEDULER_ADOPT', false),
    processes: {
      portRange: portRange(env),
      healthcheckTimeoutMs: integer(env, 'HEALTHCHECK_TIMEOUT', 30, 1, 3600) * 1000,
      stopTimeoutMs: integer(env, 'PROCESS_STOP_TIMEOUT_SECONDS', 10, 0, 600) * 1000,
      sandbox: sandbox(env, buildpacks.networkAllow),
    },
    docker: docker(env, registry),
    swarm: swarm(env),
    schedulerChaos: chaos(env),
    apiVersion: oneOf<ApiVersion>(env, 'SVC_API_VERSION', '1.7', API_VERSIONS),
    secretKey,
    passwordScryptN: powerOfTwo(env, 'PASSWORD_SCRYPT_N', 16384, 1024, 1024 * 1024),
    production,
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    trustProxy: flag(env, 'TRUST_PROXY', false),
    corsAllowedOrigins: corsOrigins(env),
    allowedHosts: allowedHosts(env),
    dashboard: flag(env, 'DASHBOARD', true),
    connections: {
      ...connectionCaps(env, { total: 'API_MAX_CONNECTIONS', perAddress: 'API_MAX_CONNECTIONS_PER_ADDRESS', reserved: 'API_CONNECTIONS_RESERVED' }, 2000, 100),
      headersTimeoutMs: integer(env, 'API_HEADERS_TIMEOUT_MS', 20_000, 100, 3_600_000),
      requestTimeoutMs: integer(env, 'API_REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),
      keepAliveTimeoutMs: integer(env, 'API_KEEP_ALIVE_TIMEOUT_MS', 65_000, 100, 3_600_000),
    },
    gitConnections: {
      ...connectionCaps(env, { total: 'GIT_SSH_MAX_CONNECTIONS', perAddress: 'GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS', reserved: 'GIT_SSH_CONNECTIONS_RESERVED' }, 200, 10),
      authTimeoutMs: integer(env, 'GIT_SSH_AUTH_TIMEOUT_MS', 20_000, 100, 3_600_000),
    },
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10000, 0, 600000),
    gitSshPort: gitSshPort(env),
    gitSshHost: text(env, 'GIT_SSH_HOST', text(env, 'HOST', '127.0.0.1')),
    routerPort: routerPort(env),
    routerHost: text(env, 'ROUTER_HOST', text(env, 'HOST', '127.0.0.1')),
    routerTlsPort: routerTlsPort(env),
    appsUrl: appsUrlSettings(env),
    metrics: metrics(env),
    router: routerSettings(env),
    settings,
    // REGISTRY is checked whether or not images are built: a bad value stops the start either way.
    imageBuilds: imageBuilds(env, registry),
    buildpacks,
    events: eventSettings(env, (name, fallback, min, max) => integer(env, name, fallback, min, max)),
    registryLogin: registryLogin(env, registry),
    acme: acmeConfig(env, (name, fallback, min, max) => integer(env, name, fallback, min, max)),
  };
}
