import { loadConfig } from '../src';
import { failureOf } from './support/config';

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
      expect(config.buildpacks).toEqual({ dir: null, cacheLimitBytes: 512 * 1024 * 1024, imageLimitBytes: 2048 * 1024 * 1024, network: 'svc-build', bridge: 'svc-build0', networkAllow: [] });
    });

    it('reads BUILDPACK_NETWORK and BUILDPACK_BRIDGE, and refuses a name the engine or Linux would not take', () => {
      expect(loadConfig({ BUILDPACK_NETWORK: 'builds-2', BUILDPACK_BRIDGE: 'svcb2' }).buildpacks).toMatchObject({ network: 'builds-2', bridge: 'svcb2' });
      expect(() => loadConfig({ BUILDPACK_NETWORK: 'a b' })).toThrow(/^BUILDPACK_NETWORK: is not a network name/);
      expect(() => loadConfig({ BUILDPACK_BRIDGE: 'a-bridge-name-too-long' })).toThrow(/^BUILDPACK_BRIDGE: must be a Linux interface name of at most 15 characters/);
    });

    it('reads BUILD_NETWORK_ALLOW as IPv4 addresses and ranges with optional ports, for the engine\'s build network and the sandbox alike', () => {
      const config = loadConfig({ BUILD_NETWORK_ALLOW: ' 10.1.2.3:4873, 10.8.0.0/16  192.168.5.20/32:443,127.0.0.1' });
      const allowed = [
        { cidr: '10.1.2.3/32', port: 4873 },
        { cidr: '10.8.0.0/16', port: null },
        { cidr: '192.168.5.20/32', port: 443 },
        { cidr: '127.0.0.1/32', port: null },
      ];
      expect(config.buildpacks.networkAllow).toEqual(allowed);
      expect(config.processes.sandbox?.buildAllowed).toEqual(allowed);
    });

    it.each([
      ['a name', 'mirror.internal:4873', /names are not taken/],
      ['an IPv6 address', '[fd00::1]:4873', /not an IPv4 address or range/],
      ['a bad address', '10.1.2.300', /not an IPv4 address or range/],
      ['a long prefix', '10.0.0.0/33', /prefix length is at most 32/],
      ['port 0', '10.1.2.3:0', /a port is from 1 to 65535/],
      ['a high port', '10.1.2.3:70000', /a port is from 1 to 65535/],
      ['an option', '-j ACCEPT', /not an IPv4 address or range/],
    ])('refuses a BUILD_NETWORK_ALLOW entry that is %s, naming the variable', (_what, entry, message) => {
      const failure = failureOf({ BUILD_NETWORK_ALLOW: entry })?.message ?? '';
      expect(failure).toMatch(/^BUILD_NETWORK_ALLOW: /);
      expect(failure).toMatch(message);
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
