import { availableParallelism } from 'node:os';
import { join } from 'node:path';
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

  it('reads DEPLOY_LEASE_SECONDS, 30 by default', () => {
    expect(loadConfig({}).settings.deployLeaseSeconds).toBe(30);
    expect(loadConfig({ DEPLOY_LEASE_SECONDS: '5' }).settings.deployLeaseSeconds).toBe(5);
  });

  it.each([
    ['GIT_SSH_PORT', 'ssh'],
    ['GIT_SSH_PORT', '65536'],
    ['BUILD_RETENTION', '0'],
    ['BUILD_RETENTION', 'all'],
    ['DEPLOY_LEASE_SECONDS', '2'],
    ['DEPLOY_LEASE_SECONDS', 'long'],
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
        reservedConnections: 5000,
        headersTimeoutMs: 10_000,
        idleTimeoutMs: 60_000,
        upstreamMaxSockets: 512,
        upstreamIdleSockets: 128,
        upstreamIdleTimeoutMs: 4000,
        accessLogSample: 1,
        socket: null,
      });
    });

    it('reads ROUTER_WORKERS (0 = in the controller process) and the other ROUTER_* settings', () => {
      const config = loadConfig({
        ROUTER_WORKERS: '0',
        ROUTER_ROUTE_REFRESH_MS: '500',
        ROUTER_MAX_CONNECTIONS: '100',
        ROUTER_MAX_CONNECTIONS_PER_CLIENT: '10',
        ROUTER_CONNECTIONS_RESERVED: '20',
        ROUTER_HEADERS_TIMEOUT_MS: '2000',
        ROUTER_IDLE_TIMEOUT_MS: '30000',
        ROUTER_UPSTREAM_MAX_SOCKETS: '64',
        ROUTER_UPSTREAM_IDLE_SOCKETS: '8',
        ROUTER_UPSTREAM_IDLE_TIMEOUT_MS: '2000',
        ROUTER_ACCESS_LOG_SAMPLE: '0.05',
        ROUTER_SOCKET: '/run/svc/router.sock',
      });

      expect(config.router).toEqual({
        workers: 0,
        routeRefreshMs: 500,
        maxConnections: 100,
        maxConnectionsPerClient: 10,
        reservedConnections: 20,
        headersTimeoutMs: 2000,
        idleTimeoutMs: 30_000,
        upstreamMaxSockets: 64,
        upstreamIdleSockets: 8,
        upstreamIdleTimeoutMs: 2000,
        accessLogSample: 0.05,
        socket: '/run/svc/router.sock',
      });
      // A relative socket path is made absolute: the router and the controller may start in different directories.
      expect(loadConfig({ ROUTER_SOCKET: 'data/router.sock' }).router.socket).toBe(join(process.cwd(), 'data', 'router.sock'));
      expect(loadConfig({ ROUTER_WORKERS: 'AUTO' }).router.workers).toBe(availableParallelism());
      expect(loadConfig({ ROUTER_MAX_CONNECTIONS: '100' }).router.reservedConnections).toBe(50);
    });

    it.each([
      ['ROUTER_WORKERS', 'many'],
      ['ROUTER_WORKERS', '-1'],
      ['ROUTER_ACCESS_LOG_SAMPLE', '1.5'],
      ['ROUTER_ACCESS_LOG_SAMPLE', 'half'],
      ['ROUTER_MAX_CONNECTIONS_PER_CLIENT', '0'],
      ['ROUTER_CONNECTIONS_RESERVED', '10000'],
      ['ROUTER_HEADERS_TIMEOUT_MS', '10'],
      ['ROUTER_SOCKET', `/${'long/'.repeat(25)}router.sock`],
    ])('refuses %s=%p, naming the variable', (variable, value) => {
      expect(failureOf({ [variable]: value })?.message).toMatch(new RegExp(`^${variable}: `));
    });
  });
});

describe('loadConfig: image builds', () => {
  it('builds images unless the process or memory scheduler is chosen: then pushed commits run from their checkout', () => {
    expect(loadConfig({}).imageBuilds).not.toBeNull();
    expect(loadConfig({ SCHEDULER: 'docker' }).imageBuilds).not.toBeNull();
    expect(loadConfig({ SCHEDULER: 'memory' }).imageBuilds).toBeNull();
    expect(loadConfig({ SCHEDULER: 'process' }).imageBuilds).toBeNull();
    expect(loadConfig({ SCHEDULER: 'docker', IMAGE_BUILDER: 'none' }).imageBuilds).toBeNull();
  });

  it('reads the builder\'s engine, stack image and limits, with their defaults', () => {
    expect(loadConfig({ SCHEDULER: 'memory', IMAGE_BUILDER: 'docker' }).imageBuilds).toEqual({
      stackImage: 'localhost/svc-stack:latest',
      timeoutMs: 600_000,
      memoryBytes: 1024 * 1024 * 1024,
      cpuShares: 512,
      contextLimitBytes: 256 * 1024 * 1024,
      network: 'none',
      registry: null,
      imageLimitBytes: 2048 * 1024 * 1024,
      pidsLimit: 512,
      guards: 'auto',
    });
    expect(loadConfig({
      SCHEDULER: 'memory',
      IMAGE_BUILDER: 'docker',
      DOCKER_HOST: 'tcp://127.0.0.1:2375',
      STACK_IMAGE: 'registry.local:5000/stacks/node:20',
      BUILD_TIMEOUT_SECONDS: '120',
      BUILD_MEMORY_MB: '512',
      BUILD_CPU_SHARES: '256',
      BUILD_CONTEXT_LIMIT_MB: '64',
      BUILD_NETWORK: 'builds',
      REGISTRY: 'registry.local:5000/platform/',
      BUILD_IMAGE_LIMIT_MB: '300',
      BUILD_PIDS_LIMIT: '64',
      DOCKER_GUARDS: 'engine',
    }).imageBuilds).toEqual({
      stackImage: 'registry.local:5000/stacks/node:20',
      timeoutMs: 120_000,
      memoryBytes: 512 * 1024 * 1024,
      cpuShares: 256,
      contextLimitBytes: 64 * 1024 * 1024,
      network: 'builds',
      registry: 'registry.local:5000/platform',
      imageLimitBytes: 300 * 1024 * 1024,
      pidsLimit: 64,
      guards: 'engine',
    });
  });

  it('reads the registries tenants may pull from on private networks, and the engine\'s log limits', () => {
    const docker = loadConfig({ SCHEDULER: 'memory', REGISTRY_ALLOW: ' 10.0.0.5:5000, registry.internal ,[fd00::1]:5000', DOCKER_LOG_MAX_SIZE: '500k', DOCKER_LOG_MAX_FILE: '2' }).docker;
    expect(docker.registryAllow).toEqual(['10.0.0.5:5000', 'registry.internal', '[fd00::1]:5000']);
    expect(docker.logLimit).toEqual({ maxSize: '500k', maxFiles: 2 });
    expect(loadConfig({ SCHEDULER: 'memory' }).docker.logLimit).toEqual({ maxSize: '10m', maxFiles: 3 });
    expect(failureOf({ SCHEDULER: 'memory', REGISTRY_ALLOW: 'http://x/' })?.message).toMatch(/^REGISTRY_ALLOW: /);
    expect(failureOf({ SCHEDULER: 'memory', DOCKER_LOG_MAX_SIZE: 'lots' })?.message).toMatch(/^DOCKER_LOG_MAX_SIZE: /);
  });

  it('reads REGISTRY as host[:port][/path] of a registry, never a name the engine would look up on Docker Hub', () => {
    const builds = { SCHEDULER: 'memory', IMAGE_BUILDER: 'docker' };
    const registryOf = (value: string) => loadConfig({ ...builds, REGISTRY: value }).imageBuilds?.registry;
    expect(registryOf('10.0.0.1:5000')).toBe('10.0.0.1:5000');
    expect(registryOf('registry.example.com')).toBe('registry.example.com');
    expect(registryOf('localhost/team/apps')).toBe('localhost/team/apps');
    expect(registryOf('registry:5000')).toBe('registry:5000');
    expect(registryOf('[fd00::1]:5000')).toBe('[fd00::1]:5000');
    expect(failureOf({ ...builds, REGISTRY: 'registry' })?.message).toMatch(/^REGISTRY: "registry" would be read as a namespace on Docker Hub/);
    for (const bad of ['http://registry.example.com', 'registry.example.com:99999', 'registry.example.com/Team', 'reg istry.example.com', 'registry.example.com:5000/app:1', '-bad.example.com']) {
      expect(failureOf({ ...builds, REGISTRY: bad })?.message).toMatch(/^REGISTRY: must be host\[:port\]\[\/path\]/);
    }
  });

  it('reads the registry login (REGISTRY_USERNAME and REGISTRY_PASSWORD) with REGISTRY only, both or neither, never echoing the password', () => {
    const builds = { SCHEDULER: 'memory', IMAGE_BUILDER: 'docker', REGISTRY: 'registry.example.com/platform' };
    expect(loadConfig(builds).registryLogin).toBeNull();
    expect(loadConfig({ ...builds, REGISTRY_USERNAME: 'svc', REGISTRY_PASSWORD: ' s3cret: with spaces ' }).registryLogin).toEqual({
      registry: 'registry.example.com/platform',
      username: 'svc',
      password: ' s3cret: with spaces ',
    });
    // A login for images that are not built here: the schedulers pull the registry's images with it.
    expect(loadConfig({ SCHEDULER: 'memory', IMAGE_BUILDER: 'none', REGISTRY: '10.0.0.1:5000', REGISTRY_USERNAME: 'svc', REGISTRY_PASSWORD: 'p' }).registryLogin?.username).toBe('svc');

    const failures = [
      [{ ...builds, REGISTRY_USERNAME: 'svc' }, /^REGISTRY_PASSWORD: must be set with REGISTRY_USERNAME/],
      [{ ...builds, REGISTRY_PASSWORD: 'hunter2-secret' }, /^REGISTRY_USERNAME: must be set with REGISTRY_PASSWORD/],
      [{ ...builds, REGISTRY_USERNAME: 'a:b', REGISTRY_PASSWORD: 'hunter2-secret' }, /^REGISTRY_USERNAME: cannot hold spaces or colons/],
      [{ SCHEDULER: 'memory', REGISTRY_USERNAME: 'svc', REGISTRY_PASSWORD: 'hunter2-secret' }, /^REGISTRY_USERNAME: is set, but REGISTRY is not/],
      [{ SCHEDULER: 'memory', REGISTRY_PASSWORD: 'hunter2-secret' }, /^REGISTRY_PASSWORD: is set, but REGISTRY is not/],
    ] as const;
    for (const [env, message] of failures) {
      const failure = failureOf(env);
      expect(failure?.message).toMatch(message);
      expect(failure?.message).not.toContain('hunter2');
    }
  });

  it('names the variable of a value it cannot use', () => {
    const builds = { SCHEDULER: 'memory', IMAGE_BUILDER: 'docker' };
    expect(failureOf({ SCHEDULER: 'process', IMAGE_BUILDER: 'docker' })?.message).toMatch(/^IMAGE_BUILDER: cannot be docker with SCHEDULER=process/);
    expect(failureOf({ IMAGE_BUILDER: 'kaniko' })?.message).toMatch(/^IMAGE_BUILDER: must be one of docker, none/);
    expect(failureOf({ ...builds, DOCKER_HOST: 'ssh://host' })?.message).toMatch(/^DOCKER_HOST:/);
    expect(failureOf({ ...builds, STACK_IMAGE: 'Not An Image' })?.message).toMatch(/^STACK_IMAGE:/);
    expect(failureOf({ ...builds, BUILD_NETWORK: 'host; rm' })?.message).toMatch(/^BUILD_NETWORK:/);
    expect(failureOf({ ...builds, BUILD_NETWORK: 'host' })?.message).toMatch(/^BUILD_NETWORK: cannot be host/);
    expect(failureOf({ ...builds, BUILD_TIMEOUT_SECONDS: '5' })?.message).toMatch(/^BUILD_TIMEOUT_SECONDS:/);
    expect(failureOf({ ...builds, BUILD_MEMORY_MB: '8' })?.message).toMatch(/^BUILD_MEMORY_MB:/);
  });
});

describe('loadConfig: tenant limits', () => {
  it('defaults quotas, login throttling, log followers, CORS, hosts and connection limits', () => {
    const config = loadConfig({});
    expect(config.settings).toMatchObject({
      quotas: { appsPerUser: 100, processTypesPerApp: 20, processesPerApp: 100, processesPerUser: 500, configBytes: 65536, domainsPerApp: 100 },
      loginFailureLimit: 10,
      loginFailureWindowSeconds: 900,
      loginBackoffSeconds: 30,
      loginBackoffMaxSeconds: 900,
      loginUsernameFailureLimit: 100,
      logFollowersPerUser: 10,
      logFollowersTotal: 1000,
    });
    expect(config).toMatchObject({
      corsAllowedOrigins: [],
      allowedHosts: [],
      connections: { maxConnections: 2000, maxConnectionsPerAddress: 100, reservedConnections: 1000, headersTimeoutMs: 20000, requestTimeoutMs: 60000, keepAliveTimeoutMs: 65000 },
      gitConnections: { maxConnections: 200, maxConnectionsPerAddress: 10, reservedConnections: 100, authTimeoutMs: 20000 },
    });
  });

  it('reads every tenant-limit variable', () => {
    const config = loadConfig({
      QUOTA_APPS_PER_USER: '1',
      QUOTA_PROCESS_TYPES_PER_APP: '2',
      QUOTA_PROCESSES_PER_APP: '3',
      QUOTA_PROCESSES_PER_USER: '4',
      QUOTA_CONFIG_BYTES: '5',
      QUOTA_DOMAINS_PER_APP: '6',
      LOGIN_FAILURE_LIMIT: '3',
      LOGIN_FAILURE_WINDOW_SECONDS: '600',
      LOGIN_BACKOFF_SECONDS: '5',
      LOGIN_BACKOFF_MAX_SECONDS: '300',
      LOGIN_USERNAME_FAILURE_LIMIT: '20',
      LOG_FOLLOWERS_PER_USER: '2',
      LOG_FOLLOWERS_TOTAL: '50',
      CORS_ALLOWED_ORIGINS: 'https://ui.example.com, http://localhost:3000',
      ALLOWED_HOSTS: 'svc.example.com,.internal.example',
      API_MAX_CONNECTIONS: '10',
      API_MAX_CONNECTIONS_PER_ADDRESS: '5',
      API_CONNECTIONS_RESERVED: '3',
      API_HEADERS_TIMEOUT_MS: '1000',
      API_REQUEST_TIMEOUT_MS: '2000',
      API_KEEP_ALIVE_TIMEOUT_MS: '3000',
      GIT_SSH_MAX_CONNECTIONS: '7',
      GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS: '2',
      GIT_SSH_CONNECTIONS_RESERVED: '0',
      GIT_SSH_AUTH_TIMEOUT_MS: '4000',
    });
    expect(config.settings.quotas).toEqual({ appsPerUser: 1, processTypesPerApp: 2, processesPerApp: 3, processesPerUser: 4, configBytes: 5, domainsPerApp: 6 });
    expect(config.settings).toMatchObject({ loginFailureLimit: 3, loginFailureWindowSeconds: 600, loginBackoffSeconds: 5, loginBackoffMaxSeconds: 300, loginUsernameFailureLimit: 20, logFollowersPerUser: 2, logFollowersTotal: 50 });
    expect(config.corsAllowedOrigins).toEqual(['https://ui.example.com', 'http://localhost:3000']);
    expect(config.allowedHosts).toEqual(['svc.example.com', '.internal.example']);
    expect(config.connections).toEqual({ maxConnections: 10, maxConnectionsPerAddress: 5, reservedConnections: 3, headersTimeoutMs: 1000, requestTimeoutMs: 2000, keepAliveTimeoutMs: 3000 });
    expect(config.gitConnections).toEqual({ maxConnections: 7, maxConnectionsPerAddress: 2, reservedConnections: 0, authTimeoutMs: 4000 });
  });

  it('reads QUOTA_RUNS_PER_USER (one-off processes of one owner at once), 5 by default', () => {
    expect(loadConfig({}).settings.runsPerUser).toBe(5);
    expect(loadConfig({ QUOTA_RUNS_PER_USER: '1' }).settings.runsPerUser).toBe(1);
  });

  it('reserves half of each total for clients holding no connection unless told otherwise', () => {
    expect(loadConfig({ API_MAX_CONNECTIONS: '9', GIT_SSH_MAX_CONNECTIONS: '1' })).toMatchObject({
      connections: { maxConnections: 9, reservedConnections: 4 },
      gitConnections: { maxConnections: 1, reservedConnections: 0 },
    });
  });

  it.each([
    ['CORS_ALLOWED_ORIGINS', 'ui.example.com'],
    ['CORS_ALLOWED_ORIGINS', 'https://ui.example.com/path'],
    ['ALLOWED_HOSTS', 'not a host'],
    ['QUOTA_APPS_PER_USER', '0'],
    ['QUOTA_RUNS_PER_USER', '0'],
    ['QUOTA_RUNS_PER_USER', '10001'],
    ['LOGIN_BACKOFF_MAX_SECONDS', '901'],
    ['API_MAX_CONNECTIONS_PER_ADDRESS', '0'],
    ['API_CONNECTIONS_RESERVED', '2000'],
    ['GIT_SSH_CONNECTIONS_RESERVED', '-1'],
  ])('refuses %s=%s, naming the variable', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable}: `));
  });
});

describe('loadConfig: metrics', () => {
  it('serves GET /metrics without a token by default', () => {
    expect(loadConfig({}).metrics).toEqual({ enabled: true, token: null });
  });

  it('reads METRICS (off = no endpoint) and METRICS_TOKEN', () => {
    expect(loadConfig({ METRICS: 'off' }).metrics.enabled).toBe(false);
    expect(loadConfig({ METRICS_TOKEN: ' 0123456789abcdef ' }).metrics).toEqual({ enabled: true, token: '0123456789abcdef' });
  });

  it.each([
    ['METRICS', 'maybe'],
    ['METRICS_TOKEN', 'short'],
    ['METRICS_TOKEN', 'has a space in it somewhere'],
  ])('refuses %s=%p, naming the variable', (variable, value) => {
    expect(failureOf({ [variable]: value })?.message).toMatch(new RegExp(`^${variable}: `));
  });

  describe('buildpacks and the release phase', () => {
    it('admits no buildpack URL, gives the release phase 300 s, keeps a 512 MiB build cache and no operator buildpacks by default', () => {
      const config = loadConfig({});
      expect(config.settings.buildpackUrlAllow).toEqual([]);
      expect(config.settings.releasePhaseTimeoutSeconds).toBe(300);
      expect(config.buildpacks).toEqual({ dir: null, cacheLimitBytes: 512 * 1024 * 1024, imageLimitBytes: 2048 * 1024 * 1024, network: 'svc-build', bridge: 'svc-build0' });
    });

    it('reads BUILDPACK_NETWORK and BUILDPACK_BRIDGE, and refuses a name the engine or Linux would not take', () => {
      expect(loadConfig({ BUILDPACK_NETWORK: 'builds-2', BUILDPACK_BRIDGE: 'svcb2' }).buildpacks).toMatchObject({ network: 'builds-2', bridge: 'svcb2' });
      expect(() => loadConfig({ BUILDPACK_NETWORK: 'a b' })).toThrow(/^BUILDPACK_NETWORK: is not a network name/);
      expect(() => loadConfig({ BUILDPACK_BRIDGE: 'a-bridge-name-too-long' })).toThrow(/^BUILDPACK_BRIDGE: must be a Linux interface name of at most 15 characters/);
    });

    it('reads BUILDPACK_URL_ALLOW as comma-separated URLs and prefixes, normalised', () => {
      const config = loadConfig({ BUILDPACK_URL_ALLOW: ' https://GitHub.com/acme/ , https://git.example.com:443/packs/node.git/ ,, https://x.example/a.git' });
      expect(config.settings.buildpackUrlAllow).toEqual(['https://github.com/acme/', 'https://git.example.com/packs/node.git/', 'https://x.example/a.git']);
    });

    it.each([
      ['credentials', 'https://user:secret@github.com/acme/'],
      ['a dot-dot segment', 'https://github.com/acme/../evil/'],
      ['an odd scheme', 'file:///srv/buildpacks/'],
      ['an ssh URL', 'git@github.com:acme/pack.git'],
      ['a query', 'https://github.com/acme/pack?x=1'],
    ])('refuses a BUILDPACK_URL_ALLOW entry with %s, naming the variable', (_what, entry) => {
      expect(failureOf({ BUILDPACK_URL_ALLOW: entry })?.message).toMatch(/^BUILDPACK_URL_ALLOW: /);
    });

    it('never echoes a password written into a BUILDPACK_URL_ALLOW entry', () => {
      const message = failureOf({ BUILDPACK_URL_ALLOW: 'https://u:hunter2@h.example/' })?.message;
      expect(message).toContain('cannot carry credentials');
      expect(message).not.toContain('hunter2');
    });

    it('reads RELEASE_PHASE_TIMEOUT_SECONDS from 1 to 86400', () => {
      expect(loadConfig({ RELEASE_PHASE_TIMEOUT_SECONDS: '45' }).settings.releasePhaseTimeoutSeconds).toBe(45);
      expect(failureOf({ RELEASE_PHASE_TIMEOUT_SECONDS: '0' })?.message).toMatch(/^RELEASE_PHASE_TIMEOUT_SECONDS: /);
      expect(failureOf({ RELEASE_PHASE_TIMEOUT_SECONDS: '86401' })?.message).toMatch(/^RELEASE_PHASE_TIMEOUT_SECONDS: /);
      expect(failureOf({ RELEASE_PHASE_TIMEOUT_SECONDS: '5m' })?.message).toMatch(/^RELEASE_PHASE_TIMEOUT_SECONDS: /);
    });

    it('reads BUILD_CACHE_LIMIT_MB (0 keeps no cache) and refuses a negative or huge one', () => {
      expect(loadConfig({ BUILD_CACHE_LIMIT_MB: '0' }).buildpacks.cacheLimitBytes).toBe(0);
      expect(loadConfig({ BUILD_CACHE_LIMIT_MB: '100' }).buildpacks.cacheLimitBytes).toBe(100 * 1024 * 1024);
      expect(failureOf({ BUILD_CACHE_LIMIT_MB: '-1' })?.message).toMatch(/^BUILD_CACHE_LIMIT_MB: /);
      expect(failureOf({ BUILD_CACHE_LIMIT_MB: '65537' })?.message).toMatch(/^BUILD_CACHE_LIMIT_MB: /);
    });

    it('reads BUILD_IMAGE_LIMIT_MB for buildpack builds of every scheduler, the process one included, and refuses 0', () => {
      expect(loadConfig({ SCHEDULER: 'process', BUILD_IMAGE_LIMIT_MB: '200' }).buildpacks.imageLimitBytes).toBe(200 * 1024 * 1024);
      expect(failureOf({ SCHEDULER: 'process', BUILD_IMAGE_LIMIT_MB: '0' })?.message).toMatch(/^BUILD_IMAGE_LIMIT_MB: /);
    });

    it('takes BUILDPACKS_DIR as an absolute path to an existing directory, and refuses a missing one or a file', () => {
      expect(loadConfig({ BUILDPACKS_DIR: __dirname }).buildpacks.dir).toBe(__dirname);
      expect(failureOf({ BUILDPACKS_DIR: '/nonexistent/buildpacks' })?.message).toMatch(/^BUILDPACKS_DIR: must be an existing directory/);
      expect(failureOf({ BUILDPACKS_DIR: __filename })?.message).toMatch(/^BUILDPACKS_DIR: /);
    });
  });
});

describe('loadConfig: dashboard', () => {
  it('serves the dashboard by default, not with DASHBOARD=off, and refuses another value', () => {
    expect(loadConfig({}).dashboard).toBe(true);
    expect(loadConfig({ DASHBOARD: 'off' }).dashboard).toBe(false);
    expect(failureOf({ DASHBOARD: 'maybe' })?.message).toMatch(/^DASHBOARD: /);
  });
});
