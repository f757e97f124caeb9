import { loadConfig } from '../src';
import { reachableHost, readyLine, type StartedAddresses } from '../src/ready-line';

const started = (overrides: Partial<StartedAddresses> = {}): StartedAddresses => ({
  url: 'http://127.0.0.1:8000',
  routerPort: 8080,
  routerTlsPort: null,
  gitPort: 2222,
  readiness: {},
  ...overrides,
});

describe('readyLine', () => {
  it('names the API, the dashboard, the apps on the router and the git remote with the ports bound', () => {
    expect(readyLine(loadConfig({}), started())).toBe(
      'ready: API http://127.0.0.1:8000/  dashboard http://127.0.0.1:8000/dashboard/  apps http://<app>.localhost:8080/  git ssh://git@127.0.0.1:2222/<app>.git',
    );
  });

  it('gives the loopback address for a controller listening on every address, and the platform domain of the apps', () => {
    const config = loadConfig({ HOST: '0.0.0.0', PLATFORM_DOMAIN: 'apps.example.com' });

    expect(readyLine(config, started({ url: 'http://0.0.0.0:41234', routerPort: 41235, gitPort: 41236 }))).toBe(
      'ready: API http://127.0.0.1:41234/  dashboard http://127.0.0.1:41234/dashboard/  apps http://<app>.apps.example.com:41235/  git ssh://git@127.0.0.1:41236/<app>.git',
    );
  });

  it('gives the apps\' public scheme and port when APPS_URL_* say so, and leaves out what is off', () => {
    const config = loadConfig({ DASHBOARD: 'false', APPS_URL_SCHEME: 'https', PLATFORM_DOMAIN: 'example.com' });

    expect(readyLine(config, started({ gitPort: null }))).toBe('ready: API http://127.0.0.1:8000/  apps https://<app>.example.com/');
    expect(readyLine(loadConfig({}), started({ routerPort: null, gitPort: null }))).toBe('ready: API http://127.0.0.1:8000/  dashboard http://127.0.0.1:8000/dashboard/');
  });

  it('says degraded, with how many reasons and where they are, when apps or builds cannot run', () => {
    const line = readyLine(loadConfig({}), started({ readiness: { status: 'degraded', reasons: ['no sandbox', 'the build network cannot be guarded'] } }));

    expect(line).toBe(
      'degraded (2 reasons in the log above and at http://127.0.0.1:8000/readyz): API http://127.0.0.1:8000/  dashboard http://127.0.0.1:8000/dashboard/  ' +
        'apps http://<app>.localhost:8080/  git ssh://git@127.0.0.1:2222/<app>.git',
    );
  });
});

describe('reachableHost', () => {
  it('keeps a name or an address, brackets IPv6, and turns a wildcard into loopback', () => {
    expect(['localhost', '10.0.0.5', '::1', '[::1]', '0.0.0.0', '::', '[::]'].map(reachableHost)).toEqual(['localhost', '10.0.0.5', '[::1]', '[::1]', '127.0.0.1', '[::1]', '[::1]']);
  });
});
