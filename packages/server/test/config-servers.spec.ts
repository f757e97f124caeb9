import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src';
import { failureOf } from './support/config';

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

describe('loadConfig: dashboard', () => {
  it('serves the dashboard by default, not with DASHBOARD=off, and refuses another value', () => {
    expect(loadConfig({}).dashboard).toBe(true);
    expect(loadConfig({ DASHBOARD: 'off' }).dashboard).toBe(false);
    expect(failureOf({ DASHBOARD: 'maybe' })?.message).toMatch(/^DASHBOARD: /);
  });
});
