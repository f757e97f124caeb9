import { availableParallelism } from 'node:os';
import { DEFAULT_SETTINGS } from '@svc/core';
import { ConfigError, loadConfig } from '../src';

const SECRET = 's'.repeat(32);

/** The error loadConfig throws for an environment, or null when it accepts it. */
function failureOf(env: Record<string, string>): ConfigError | null {
  try {
    loadConfig(env);
    return null;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}

describe('loadConfig', () => {
  it('defaults every value when the environment is empty', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8000,
      host: '127.0.0.1',
      dataDir: './data',
      databaseUrl: null,
      dbPoolSize: 10,
      dbStatementTimeoutMs: 30000,
      dbConnectRetries: 10,
      apiVersion: '1.7',
      secretKey: null,
      production: false,
      logLevel: 'info',
      trustProxy: false,
      shutdownTimeoutMs: 10000,
    });
    expect(config.settings).toMatchObject({
      platformDomain: 'localhost',
      reservedAppNames: ['svc', 'controller', 'api', 'www', 'router'],
      registrationMode: 'enabled',
      tokenTtlSeconds: null,
      scaleMaxPerType: 100,
      runTimeoutSeconds: 1200,
      runOutputLimitBytes: 1024 * 1024,
      loginFailureLimit: DEFAULT_SETTINGS.loginFailureLimit,
      loginFailureWindowSeconds: DEFAULT_SETTINGS.loginFailureWindowSeconds,
    });
  });

  it('runs apps as processes by default, on ports 20000-29999, with 30 s to come up and 10 s to stop', () => {
    expect(loadConfig({})).toMatchObject({
      scheduler: 'process',
      processes: { portRange: { from: 20000, to: 29999 }, healthcheckTimeoutMs: 30_000, stopTimeoutMs: 10_000 },
    });
  });

  it('accepts the memory scheduler, which the e2e suites and load tests use', () => {
    expect(loadConfig({ SCHEDULER: 'memory' }).scheduler).toBe('memory');
  });

  it('treats blank values as unset', () => {
    expect(loadConfig({ PORT: '  ', SVC_API_VERSION: '', DATABASE_URL: ' ', SECRET_KEY: '' })).toMatchObject({
      port: 8000,
      apiVersion: '1.7',
      databaseUrl: null,
      secretKey: null,
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '0',
      HOST: '0.0.0.0',
      DATA_DIR: '/var/lib/svc',
      DATABASE_URL: 'postgresql://svc@db:5432/svc',
      DB_POOL_SIZE: '20',
      DB_STATEMENT_TIMEOUT_MS: '0',
      DB_CONNECT_RETRIES: '3',
      SCHEDULER: 'memory',
      SVC_API_VERSION: '1.3',
      SECRET_KEY: SECRET,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      TRUST_PROXY: 'yes',
      SHUTDOWN_TIMEOUT_MS: '2500',
      PLATFORM_DOMAIN: 'Apps.Example.COM',
      RESERVED_APP_NAMES: ' admin , ,status,',
      REGISTRATION_MODE: 'admin_only',
      TOKEN_TTL_SECONDS: '3600',
      SCALE_MAX_PER_TYPE: '5',
      RUN_TIMEOUT_SECONDS: '30',
      RUN_OUTPUT_LIMIT: '4096',
      PROCESS_PORT_RANGE: '31000 - 31099',
      HEALTHCHECK_TIMEOUT: '5',
      PROCESS_STOP_TIMEOUT_SECONDS: '0',
    });
    expect(config).toMatchObject({
      port: 0,
      host: '0.0.0.0',
      dataDir: '/var/lib/svc',
      databaseUrl: 'postgresql://svc@db:5432/svc',
      dbPoolSize: 20,
      dbStatementTimeoutMs: 0,
      dbConnectRetries: 3,
      apiVersion: '1.3',
      secretKey: SECRET,
      production: true,
      logLevel: 'warn',
      trustProxy: true,
      shutdownTimeoutMs: 2500,
      scheduler: 'memory',
      processes: { portRange: { from: 31000, to: 31099 }, healthcheckTimeoutMs: 5000, stopTimeoutMs: 0 },
    });
    expect(config.settings).toMatchObject({
      platformDomain: 'apps.example.com',
      reservedAppNames: ['admin', 'status'],
      registrationMode: 'admin_only',
      tokenTtlSeconds: 3600,
      scaleMaxPerType: 5,
      runTimeoutSeconds: 30,
      runOutputLimitBytes: 4096,
    });
  });

  it('accepts every API version from 1.0 to 1.7 as the default', () => {
    for (const version of ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7']) {
      expect(loadConfig({ SVC_API_VERSION: version }).apiVersion).toBe(version);
    }
  });

  it.each(['1', 'true', 'yes', 'on', 'TRUE', '0', 'false', 'no', 'off', 'Off'])('reads %s as a flag', (value) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toBe(['1', 'true', 'yes', 'on'].includes(value.toLowerCase()));
  });

  it.each([
    ['PORT', 'http'],
    ['PORT', '-1'],
    ['PORT', '65536'],
    ['PORT', '80.5'],
    ['DB_POOL_SIZE', '0'],
    ['DB_POOL_SIZE', '501'],
    ['DB_STATEMENT_TIMEOUT_MS', 'soon'],
    ['DB_CONNECT_RETRIES', '1001'],
    ['SHUTDOWN_TIMEOUT_MS', '600001'],
    ['TOKEN_TTL_SECONDS', '-5'],
    ['SCALE_MAX_PER_TYPE', '0'],
    ['SCALE_MAX_PER_TYPE', '10001'],
    ['RUN_TIMEOUT_SECONDS', '0'],
    ['RUN_OUTPUT_LIMIT', '1023'],
    ['SCHEDULER', 'kubernetes'],
    ['PROCESS_PORT_RANGE', '20000'],
    ['PROCESS_PORT_RANGE', '30000-20000'],
    ['PROCESS_PORT_RANGE', '0-100'],
    ['PROCESS_PORT_RANGE', '60000-70000'],
    ['HEALTHCHECK_TIMEOUT', '0'],
    ['HEALTHCHECK_TIMEOUT', '3601'],
    ['PROCESS_STOP_TIMEOUT_SECONDS', '601'],
    ['SVC_API_VERSION', '1.8'],
    ['SVC_API_VERSION', 'latest'],
    ['LOG_LEVEL', 'verbose'],
    ['REGISTRATION_MODE', 'open'],
    ['TRUST_PROXY', 'maybe'],
    ['PLATFORM_DOMAIN', 'not a domain'],
    ['PLATFORM_DOMAIN', '-bad.example.com'],
    ['DATABASE_URL', 'mysql://db/svc'],
    ['DATABASE_URL', 'sqlite:///tmp/x.db'],
    ['SECRET_KEY', 'short'],
  ])('refuses %s=%s with a ConfigError naming the variable', (variable, value) => {
    const error = failureOf({ [variable]: value });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.message.startsWith(`${variable}: `)).toBe(true);
    expect(error?.name).toBe('ConfigError');
  });

  it('requires SECRET_KEY in production, and only there', () => {
    const error = failureOf({ NODE_ENV: 'production' });
    expect(error?.message).toMatch(/^SECRET_KEY: .*required/);
    expect(failureOf({ NODE_ENV: 'production', SECRET_KEY: SECRET })).toBeNull();
    expect(failureOf({ NODE_ENV: 'development' })).toBeNull();
    expect(failureOf({ NODE_ENV: 'test' })).toBeNull();
  });

  it('accepts both PostgreSQL URL schemes', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@h/db' }).databaseUrl).toBe('postgres://u:p@h/db');
    expect(loadConfig({ DATABASE_URL: 'postgresql://h/db' }).databaseUrl).toBe('postgresql://h/db');
  });

  it('reads process.env when called without an argument', () => {
    const saved = process.env.SVC_API_VERSION;
    process.env.SVC_API_VERSION = '1.4';
    try {
      expect(loadConfig().apiVersion).toBe('1.4');
    } finally {
      if (saved === undefined) delete process.env.SVC_API_VERSION;
      else process.env.SVC_API_VERSION = saved;
    }
  });
});

describe('loadConfig: the git server', () => {
  it('listens on port 2222 of HOST by default and keeps the last 10 builds', () => {
    const config = loadConfig({ HOST: '0.0.0.0' });

    expect({ port: config.gitSshPort, host: config.gitSshHost, retention: config.settings.buildRetention }).toEqual({
      port: 2222,
      host: '0.0.0.0',
      retention: 10,
    });
  });

  it('reads GIT_SSH_PORT (0 = any free port, off = no git server), GIT_SSH_HOST and BUILD_RETENTION', () => {
    expect(loadConfig({ GIT_SSH_PORT: '0' }).gitSshPort).toBe(0);
    expect(loadConfig({ GIT_SSH_PORT: 'OFF' }).gitSshPort).toBeNull();
    expect(loadConfig({ GIT_SSH_HOST: '127.0.0.2', HOST: '0.0.0.0' }).gitSshHost).toBe('127.0.0.2');
    expect(loadConfig({ BUILD_RETENTION: '3' }).settings.buildRetention).toBe(3);
  });

  it.each([
    ['GIT_SSH_PORT', 'ssh'],
    ['GIT_SSH_PORT', '65536'],
    ['BUILD_RETENTION', '0'],
    ['BUILD_RETENTION', 'all'],
  ])('refuses %s=%p, naming the variable', (variable, value) => {
    expect(failureOf({ [variable]: value })?.message).toMatch(new RegExp(`^${variable}: `));
  });
});

describe('loadConfig: the router', () => {
  it('listens for HTTP on port 8080 of HOST by default, without HTTPS', () => {
    const config = loadConfig({ HOST: '0.0.0.0' });

    expect({ port: config.routerPort, host: config.routerHost, tls: config.routerTlsPort }).toEqual({ port: 8080, host: '0.0.0.0', tls: null });
  });

  it('reads ROUTER_PORT (0 = any free port, off = none), ROUTER_HOST and ROUTER_TLS_PORT (unset or off = none)', () => {
    expect(loadConfig({ ROUTER_PORT: '0' }).routerPort).toBe(0);
    expect(loadConfig({ ROUTER_PORT: 'Off' }).routerPort).toBeNull();
    expect(loadConfig({ ROUTER_HOST: '127.0.0.3', HOST: '0.0.0.0' }).routerHost).toBe('127.0.0.3');
    expect(loadConfig({ ROUTER_TLS_PORT: '8443' }).routerTlsPort).toBe(8443);
    expect(loadConfig({ ROUTER_TLS_PORT: '0' }).routerTlsPort).toBe(0);
    expect(loadConfig({ ROUTER_TLS_PORT: ' ' }).routerTlsPort).toBeNull();
    expect(loadConfig({ ROUTER_TLS_PORT: 'off' }).routerTlsPort).toBeNull();
  });

  it.each([
    ['ROUTER_PORT', 'http'],
    ['ROUTER_PORT', '65536'],
    ['ROUTER_TLS_PORT', 'https'],
    ['ROUTER_TLS_PORT', '-1'],
  ])('refuses %s=%p, naming the variable', (variable, value) => {
    expect(failureOf({ [variable]: value })?.message).toMatch(new RegExp(`^${variable}: `));
  });

  describe('router settings', () => {
    it('runs one router worker per core by default, with its limits, pools and a full access log', () => {
      expect(loadConfig({}).router).toEqual({
        workers: availableParallelism(),
        routeRefreshMs: 1000,
        maxConnections: 10_000,
        maxConnectionsPerClient: 256,
        headersTimeoutMs: 10_000,
        idleTimeoutMs: 60_000,
        upstreamMaxSockets: 512,
        upstreamIdleSockets: 128,
        upstreamIdleTimeoutMs: 4000,
        accessLogSample: 1,
      });
    });

    it('reads ROUTER_WORKERS (0 = in the controller process) and the other ROUTER_* settings', () => {
      const config = loadConfig({
        ROUTER_WORKERS: '0',
        ROUTER_ROUTE_REFRESH_MS: '500',
        ROUTER_MAX_CONNECTIONS: '100',
        ROUTER_MAX_CONNECTIONS_PER_CLIENT: '10',
        ROUTER_HEADERS_TIMEOUT_MS: '2000',
        ROUTER_IDLE_TIMEOUT_MS: '30000',
        ROUTER_UPSTREAM_MAX_SOCKETS: '64',
        ROUTER_UPSTREAM_IDLE_SOCKETS: '8',
        ROUTER_UPSTREAM_IDLE_TIMEOUT_MS: '2000',
        ROUTER_ACCESS_LOG_SAMPLE: '0.05',
      });

      expect(config.router).toEqual({
        workers: 0,
        routeRefreshMs: 500,
        maxConnections: 100,
        maxConnectionsPerClient: 10,
        headersTimeoutMs: 2000,
        idleTimeoutMs: 30_000,
        upstreamMaxSockets: 64,
        upstreamIdleSockets: 8,
        upstreamIdleTimeoutMs: 2000,
        accessLogSample: 0.05,
      });
      expect(loadConfig({ ROUTER_WORKERS: 'AUTO' }).router.workers).toBe(availableParallelism());
    });

    it.each([
      ['ROUTER_WORKERS', 'many'],
      ['ROUTER_WORKERS', '-1'],
      ['ROUTER_ACCESS_LOG_SAMPLE', '1.5'],
      ['ROUTER_ACCESS_LOG_SAMPLE', 'half'],
      ['ROUTER_MAX_CONNECTIONS_PER_CLIENT', '0'],
      ['ROUTER_HEADERS_TIMEOUT_MS', '10'],
    ])('refuses %s=%p, naming the variable', (variable, value) => {
      expect(failureOf({ [variable]: value })?.message).toMatch(new RegExp(`^${variable}: `));
    });
  });
});
