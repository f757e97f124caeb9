import { loadConfig } from '../src';

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
