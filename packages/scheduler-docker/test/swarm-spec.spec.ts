import { withProfileScripts, type ContainerSpec } from '@svc/core';
import { LABELS, logConfigOf, DEFAULT_LOG_LIMIT } from '../src';
import {
  MEMBERS_LABEL,
  freeServiceName,
  healthTimeoutMs,
  isRouted,
  jobSpec,
  limitsOf,
  replicasOf,
  serviceLabels,
  serviceName,
  serviceSpec,
  specDigest,
  taskTemplate,
  type SpecSettings,
} from '../src/swarm/service-spec';
import { membersOf } from '../src/swarm/members';

const settings: SpecSettings = {
  drainMs: 3000,
  healthIntervalMs: 2000,
  monitorMs: 3000,
  restartDelayMs: 1000,
  network: null,
  base: {
    instance: 'prod',
    user: '65534:65534',
    pidsLimit: 256,
    readonlyRootfs: false,
    defaultMemory: '1G',
    defaultCpu: 1024,
    stopTimeoutMs: 10_000,
    startTimeoutMs: 30_000,
    logConfig: logConfigOf(DEFAULT_LOG_LIMIT),
  },
};

function spec(type: string, overrides: Partial<ContainerSpec> = {}): ContainerSpec {
  return {
    id: `id-${type}`,
    app: 'shop',
    type,
    num: 1,
    release: 4,
    image: 'registry.example/shop@sha256:abc',
    command: type === 'cmd' ? null : `run ${type}`,
    workdir: null,
    env: { SVC_APP: 'shop', SVC_RELEASE: 'v4' },
    memory: '256M',
    cpu: 512,
    ...overrides,
  };
}

const template = (type: string, port: number | null, overrides: Partial<ContainerSpec> = {}) =>
  taskTemplate(settings, { spec: spec(type, overrides), own: 5000, port, digest: 'd1', imageCommand: ['node', 'server.js'], user: '65534:65534' });

describe('which process types are routed', () => {
  it('routes web and cmd (an image without a Procfile), as the router does, and no other type', () => {
    expect(isRouted('web')).toBe(true);
    expect(isRouted('cmd')).toBe(true);
    expect(isRouted('worker')).toBe(false);
    expect(isRouted('clock')).toBe(false);
  });
});

describe('the task template of a container spec', () => {
  it('health-checks and drains every routed type the same way, cmd as web: the router sends it requests only once healthy', () => {
    const web = template('web', 5000);
    const cmd = template('cmd', 5000);
    for (const made of [web, cmd]) {
      expect(made.ContainerSpec.Healthcheck?.Test).toEqual(['CMD-SHELL', expect.stringContaining('/proc/net/tcp')]);
      expect(made.ContainerSpec.Healthcheck?.StartPeriod).toBe(30_000 * 1e6);
      expect(made.ContainerSpec.Command?.slice(0, 2)).toEqual(['/bin/sh', '-c']);
      expect(made.ContainerSpec.Command?.[3]).toBe('svc-drain');
      expect(made.ContainerSpec.StopGracePeriod).toBe(13_000 * 1e6);
    }
    // The image's own command runs under the drain wrapper.
    expect(cmd.ContainerSpec.Command?.slice(4)).toEqual(['node', 'server.js']);
    expect(web.ContainerSpec.Command?.slice(4)).toEqual(['/bin/sh', '-c', withProfileScripts('run web')]);
  });

  it('gives a type that is not routed its command, no health check and no drain', () => {
    const worker = template('worker', null);
    expect(worker.ContainerSpec.Healthcheck).toBeUndefined();
    expect(worker.ContainerSpec.Command).toEqual(['/bin/sh', '-c', withProfileScripts('run worker')]);
    expect(worker.ContainerSpec.StopGracePeriod).toBe(10_000 * 1e6);
    // An image's own command is the image's: nothing is set.
    expect(template('worker', null, { command: null }).ContainerSpec.Command).toBeUndefined();
  });

  it('asks HEALTHCHECK_URL when the app sets it, within its own HEALTHCHECK_TIMEOUT', () => {
    const made = template('cmd', 5000, { env: { HEALTHCHECK_URL: '/up', HEALTHCHECK_TIMEOUT: '5' } });
    expect(made.ContainerSpec.Healthcheck?.Test[1]).toContain("'http://127.0.0.1:5000/up'");
    expect(made.ContainerSpec.Healthcheck?.StartPeriod).toBe(5000 * 1e6);
  });

  it('gives a health check 10 s (or its interval, when longer) before it counts as failed: a slow engine on a busy node is no dead task', () => {
    expect(template('web', 5000).ContainerSpec.Healthcheck?.Timeout).toBe(10_000 * 1e6);
    expect(template('web', 5000).ContainerSpec.Healthcheck?.Interval).toBe(2000 * 1e6);
    expect(healthTimeoutMs(1000)).toBe(10_000);
    expect(healthTimeoutMs(30_000)).toBe(30_000);
  });

  it('spreads the tasks over the nodes, restarts them, limits them and labels them with the digest', () => {
    const made = template('web', 5000);
    expect(made.Placement).toEqual({ Preferences: [{ Spread: { SpreadDescriptor: 'node.id' } }] });
    expect(made.RestartPolicy).toEqual({ Condition: 'any', Delay: 1e9, MaxAttempts: 0 });
    expect(made.Resources.Limits).toEqual({ Pids: 256, MemoryBytes: 256 * 1024 * 1024, NanoCPUs: 500_000_000 });
    expect(made.ContainerSpec).toMatchObject({ User: '65534:65534', Init: true, CapabilityDrop: ['ALL'], ReadOnly: false });
    expect(made.ContainerSpec.Labels).toEqual({ [LABELS.instance]: 'prod', [LABELS.app]: 'shop', [LABELS.type]: 'web', [LABELS.release]: '4', [LABELS.spec]: 'd1' });
    expect(made.Networks).toBeUndefined();
    expect(taskTemplate({ ...settings, network: 'svc-tasks' }, { spec: spec('web'), own: 5000, port: 5000, digest: 'd1', imageCommand: [], user: 'u' }).Networks).toEqual([{ Target: 'svc-tasks' }]);
  });

  it('mounts a tmpfs /tmp on a read-only root file system', () => {
    const made = taskTemplate({ ...settings, base: { ...settings.base, readonlyRootfs: true } }, { spec: spec('web'), own: 5000, port: 5000, digest: 'd', imageCommand: [], user: 'u' });
    expect(made.ContainerSpec.ReadOnly).toBe(true);
    expect(made.ContainerSpec.Mounts).toEqual([{ Type: 'tmpfs', Target: '/tmp', TmpfsOptions: { SizeBytes: 64 * 1024 * 1024, Mode: 0o1777 } }]);
  });

  it('limits by the defaults when the spec sets none', () => {
    expect(limitsOf(64, { memoryBytes: null, nanoCpus: null, cpuShares: null })).toEqual({ Pids: 64 });
  });
});

describe('the spec digest', () => {
  it('is the same for every container of a release and type, and changes with what the tasks are made from', () => {
    const one = specDigest(settings, spec('web'), 5000, 5000);
    expect(specDigest(settings, spec('web', { id: 'other', num: 2 }), 5000, 5000)).toBe(one);
    expect(specDigest(settings, spec('web', { release: 5 }), 5000, 5000)).not.toBe(one);
    expect(specDigest(settings, spec('web', { env: { A: '1' } }), 5000, 5000)).not.toBe(one);
    expect(specDigest(settings, spec('web'), 5000, null)).not.toBe(one);
    expect(specDigest({ ...settings, drainMs: 1000 }, spec('web'), 5000, 5000)).not.toBe(one);
    expect(specDigest({ ...settings, network: 'n' }, spec('web'), 5000, 5000)).not.toBe(one);
  });

  it('does not depend on the order of the environment', () => {
    expect(specDigest(settings, spec('web', { env: { A: '1', B: '2' } }), 5000, 5000)).toBe(specDigest(settings, spec('web', { env: { B: '2', A: '1' } }), 5000, 5000));
  });
});

describe('service names', () => {
  it('names a type\'s service <prefix>-<app>-<type>, and the next generations -2, -3 while earlier ones run', () => {
    expect(serviceName('svc', 'shop', 'web')).toBe('svc-shop-web');
    expect(serviceName('svc', 'shop', 'web', 2)).toBe('svc-shop-web-2');
    expect(freeServiceName('svc', 'shop', 'web', new Set())).toBe('svc-shop-web');
    expect(freeServiceName('svc', 'shop', 'web', new Set(['svc-shop-web']))).toBe('svc-shop-web-2');
    expect(freeServiceName('svc', 'shop', 'web', new Set(['svc-shop-web-2']))).toBe('svc-shop-web');
    expect(freeServiceName('svc', 'shop', 'web', new Set(['svc-shop-web', 'svc-shop-web-2']))).toBe('svc-shop-web-3');
  });

  it('uses a digest when the name would not be a valid service name, distinct for each generation', () => {
    const long = 'a'.repeat(60);
    const first = serviceName('svc', long, 'web');
    const second = serviceName('svc', long, 'web', 2);
    expect(first).toMatch(/^svc-[0-9a-f]{24}$/);
    expect(second).toMatch(/^svc-[0-9a-f]{24}$/);
    expect(second).not.toBe(first);
    expect(serviceName('svc', 'shop', 'web_x')).toMatch(/^svc-[0-9a-f]{24}$/);
  });
});

describe('the service of a process type', () => {
  const members = new Map([
    ['a', { id: 'a', num: 1, digest: 'd1' }],
    ['b', { id: 'b', num: 2, digest: 'd1' }],
  ]);

  it('runs a replica per container, publishes the routed port in host mode, and restarts start-first, rolled back on failure', () => {
    const made = serviceSpec(settings, { name: 'svc-shop-web', app: 'shop', type: 'web', release: 4, digest: 'd1', members, template: template('web', 5000), port: 5000 });
    expect(made.Mode).toEqual({ Replicated: { Replicas: 2 } });
    expect(made.EndpointSpec).toEqual({ Mode: 'vip', Ports: [{ Protocol: 'tcp', TargetPort: 5000, PublishMode: 'host' }] });
    expect(made.UpdateConfig).toEqual({ Parallelism: 0, Delay: 0, Monitor: 3e9, MaxFailureRatio: 0, Order: 'start-first', FailureAction: 'rollback' });
    expect(made.RollbackConfig?.FailureAction).toBe('pause');
    expect(serviceSpec(settings, { name: 'w', app: 'shop', type: 'worker', release: 4, digest: 'd1', members, template: template('worker', null), port: null }).EndpointSpec).toEqual({ Mode: 'vip', Ports: [] });
  });

  it('lists its containers in a label that reads back as the same members', () => {
    const labels = serviceLabels('prod', 'shop', 'web', 4, 'd1', new Map([...members, ['c', { id: 'c', num: 3, digest: 'd0' }]]));
    expect(labels[MEMBERS_LABEL]).toBe('[["a",1,""],["b",2,""],["c",3,"d0"]]');
    expect(labels[LABELS.release]).toBe('4');
    const read = membersOf({ Spec: { Labels: labels } as never });
    expect(read).toEqual([
      { id: 'a', num: 1, digest: 'd1' },
      { id: 'b', num: 2, digest: 'd1' },
      { id: 'c', num: 3, digest: 'd0' },
    ]);
    expect(membersOf({ Spec: { Labels: { [MEMBERS_LABEL]: 'not json' } } as never })).toEqual([]);
  });

  it('counts the replicas of the spec with most containers (a service of an earlier controller may list an earlier spec\'s)', () => {
    expect(replicasOf(new Map())).toBe(0);
    expect(replicasOf(members)).toBe(2);
    expect(replicasOf(new Map([...members, ['c', { id: 'c', num: 1, digest: 'd2' }]]))).toBe(2);
  });
});

describe('a one-off job', () => {
  it('is one task never restarted, of the release image, with the default limits, running the command under sh', () => {
    const made = jobSpec(settings, 'svc-run-1', { app: 'shop', release: 4, image: 'img', workdir: null, command: 'rake db:migrate', env: {}, timeoutSeconds: 60, outputLimitBytes: 1000 }, 5000, 'u');
    expect(made.Mode).toEqual({ ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } });
    expect(made.TaskTemplate.RestartPolicy).toEqual({ Condition: 'none' });
    expect(made.TaskTemplate.ContainerSpec.Command).toEqual(['/bin/sh', '-c', withProfileScripts('rake db:migrate')]);
    expect(made.TaskTemplate.Resources.Limits).toEqual({ Pids: 256, MemoryBytes: 1024 ** 3, NanoCPUs: 1e9 });
    expect(made.Labels[LABELS.type]).toBe('run');
  });
});
