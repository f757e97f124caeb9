import { DEFAULT_SETTINGS } from '@svc/core';
import { ConfigError, loadConfig } from '../src';
import { failureOf } from './support/config';

const SECRET = 's'.repeat(32);

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
      reservedAppNames: expect.arrayContaining(['svc', 'controller', 'api', 'www', 'router', 'dashboard', 'admin', 'git', 'mail', 'autodiscover']),
      registrationMode: 'enabled',
      tokenTtlSeconds: null,
      scaleMaxPerType: 100,
      runTimeoutSeconds: 1200,
      runOutputLimitBytes: 1024 * 1024,
      loginFailureLimit: DEFAULT_SETTINGS.loginFailureLimit,
      loginFailureWindowSeconds: DEFAULT_SETTINGS.loginFailureWindowSeconds,
    });
  });

  it('picks the scheduler at start-up by default; processes on ports 20000-29999, with 30 s to come up and 10 s to stop', () => {
    expect(loadConfig({})).toMatchObject({
      scheduler: 'auto',
      processes: { portRange: { from: 20000, to: 29999 }, healthcheckTimeoutMs: 30_000, stopTimeoutMs: 10_000 },
    });
  });

  it('sandboxes apps by default, and runs them unconfined only with UNSAFE_SINGLE_USER_DEV', () => {
    expect(loadConfig({}).processes.sandbox).toEqual({
      uidRange: { from: 200000, to: 265535 },
      maxProcesses: 512,
      maxOpenFiles: 1024,
      maxFileBytes: 1024 ** 3,
      tmpBytes: 64 * 1024 ** 2,
      readOnlyPaths: [],
      bwrap: 'bwrap',
      defaultMemory: '1G',
      defaultCpu: 1024,
      buildAllowed: [],
    });
    expect(
      loadConfig({
        SANDBOX_UID_RANGE: '300000-300999',
        SANDBOX_MAX_PROCESSES: '64',
        SANDBOX_MAX_OPEN_FILES: '256',
        SANDBOX_MAX_FILE_SIZE: '1048576',
        SANDBOX_TMP_SIZE: '2097152',
        SANDBOX_READ_ONLY_PATHS: '/opt/node:/srv/runtime',
        SANDBOX_BWRAP: '/opt/bubblewrap/bin/bwrap',
        SANDBOX_DEFAULT_MEMORY: '512M',
        SANDBOX_DEFAULT_CPU: '256',
      }).processes.sandbox,
    ).toEqual({
      uidRange: { from: 300000, to: 300999 },
      maxProcesses: 64,
      maxOpenFiles: 256,
      maxFileBytes: 1048576,
      tmpBytes: 2097152,
      readOnlyPaths: ['/opt/node', '/srv/runtime'],
      bwrap: '/opt/bubblewrap/bin/bwrap',
      defaultMemory: '512M',
      defaultCpu: 256,
      buildAllowed: [],
    });
    expect(loadConfig({ SANDBOX_DEFAULT_MEMORY: 'none', SANDBOX_DEFAULT_CPU: '0' }).processes.sandbox).toMatchObject({ defaultMemory: null, defaultCpu: null });
    expect(() => loadConfig({ SANDBOX_DEFAULT_MEMORY: 'lots' })).toThrow('SANDBOX_DEFAULT_MEMORY');
    expect(loadConfig({ UNSAFE_SINGLE_USER_DEV: '1' }).processes.sandbox).toBeNull();
    expect(loadConfig({ UNSAFE_SINGLE_USER_DEV: 'false' }).processes.sandbox).not.toBeNull();
  });

  it('reads the Docker scheduler settings: isolated defaults, DOCKER_HOST the Docker way', () => {
    expect(loadConfig({ SCHEDULER: 'docker' })).toMatchObject({
      scheduler: 'docker',
      docker: { host: null, network: 'svc-apps', bridge: 'svc-apps0', instance: 'default', user: '65534:65534', pidsLimit: 256, readonlyRootfs: false, pullPolicy: 'missing', guardHost: true, defaultMemory: '1G', defaultCpu: 1024 },
    });
    expect(loadConfig({ DOCKER_DEFAULT_MEMORY: 'none', DOCKER_DEFAULT_CPU: '0' }).docker).toMatchObject({ defaultMemory: null, defaultCpu: null });
    expect(() => loadConfig({ DOCKER_DEFAULT_MEMORY: 'lots' })).toThrow(/^DOCKER_DEFAULT_MEMORY: /);
    expect(loadConfig({ DOCKER_HOST: 'tcp://10.0.0.5:2375' }).docker.host).toBe('tcp://10.0.0.5:2375');
    expect(() => loadConfig({ DOCKER_HOST: 'ftp://x' })).toThrow(/^DOCKER_HOST: /);
    expect(() => loadConfig({ DOCKER_USER: '0' })).toThrow(/^DOCKER_USER: .*other than root/);
    expect(() => loadConfig({ DOCKER_USER: '1000:0' })).toThrow(/^DOCKER_USER: /);
    expect(() => loadConfig({ DOCKER_BRIDGE: 'a-bridge-name-too-long' })).toThrow(/^DOCKER_BRIDGE: /);
    expect(() => loadConfig({ SCHEDULER: 'kubernetes' })).toThrow(/^SCHEDULER: must be one of auto, process, docker, swarm, memory/);
  });

  it('reads the Swarm scheduler settings, and requires a registry for its image builds', () => {
    const swarm = loadConfig({ SCHEDULER: 'swarm', REGISTRY: '10.0.0.2:5000' });
    expect(swarm).toMatchObject({
      scheduler: 'swarm',
      swarm: { prefix: 'svc', drainMs: 3000, healthIntervalMs: 2000, monitorMs: 3000, updateTimeoutMs: 300_000, nodeAddresses: {}, network: null },
    });
    expect(swarm.imageBuilds?.registry).toBe('10.0.0.2:5000');
    expect(
      loadConfig({ SCHEDULER: 'swarm', IMAGE_BUILDER: 'none', SWARM_SERVICE_PREFIX: 'apps', SWARM_DRAIN_SECONDS: '5', SWARM_NODE_ADDRESSES: 'node-a=10.0.0.2, 4f6b2c=10.0.0.3', SWARM_NETWORK: 'svc-apps' }).swarm,
    ).toMatchObject({ prefix: 'apps', drainMs: 5000, nodeAddresses: { 'node-a': '10.0.0.2', '4f6b2c': '10.0.0.3' }, network: 'svc-apps' });
    expect(() => loadConfig({ SWARM_NETWORK: 'apps net' })).toThrow(/^SWARM_NETWORK: /);
    expect(() => loadConfig({ SCHEDULER: 'swarm' })).toThrow(/^REGISTRY: must be set with SCHEDULER=swarm/);
    expect(() => loadConfig({ SWARM_NODE_ADDRESSES: 'node-a' })).toThrow(/^SWARM_NODE_ADDRESSES: /);
    expect(() => loadConfig({ SWARM_SERVICE_PREFIX: 'no_underscores' })).toThrow(/^SWARM_SERVICE_PREFIX: /);
    expect(() => loadConfig({ SWARM_DRAIN_SECONDS: '-1' })).toThrow(/^SWARM_DRAIN_SECONDS: /);
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
    ['SANDBOX_UID_RANGE', '0-65535'],
    ['SANDBOX_UID_RANGE', '300000'],
    ['SANDBOX_UID_RANGE', '300000-200000'],
    ['SANDBOX_MAX_PROCESSES', '8'],
    ['SANDBOX_MAX_OPEN_FILES', 'many'],
    ['SANDBOX_READ_ONLY_PATHS', 'relative/path'],
    ['SANDBOX_READ_ONLY_PATHS', '/opt/../etc'],
    ['UNSAFE_SINGLE_USER_DEV', 'please'],
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
    ['PASSWORD_SCRYPT_N', '3000'],
    ['PASSWORD_SCRYPT_N', '512'],
    ['PASSWORD_SCRYPT_N', '2097152'],
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

  it('hashes new passwords with scrypt N=16384 unless PASSWORD_SCRYPT_N names another power of two', () => {
    expect(loadConfig({}).passwordScryptN).toBe(16384);
    expect(loadConfig({ PASSWORD_SCRYPT_N: '1024' }).passwordScryptN).toBe(1024);
    expect(loadConfig({ PASSWORD_SCRYPT_N: '1048576' }).passwordScryptN).toBe(1048576);
    expect(failureOf({ PASSWORD_SCRYPT_N: '3000' })?.message).toBe('PASSWORD_SCRYPT_N: must be a power of two from 1024 to 1048576, got 3000');
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
