import type { ContainerSpec } from '@svc/core';
import { DEFAULT_LOG_LIMIT, InstanceOfAnotherInstallation, LABELS, foreignInstanceProblem, isForeign, isOwnedBy, logConfigOf, ownerLabels, type Owner } from '../src';
import { containerLabels } from '../src/container-config';
import { assertServicesOwned } from '../src/swarm/prerequisites';
import { jobSpec, serviceLabels, type SpecSettings } from '../src/swarm/service-spec';
import type { ServiceInfo } from '../src/swarm/api';

const ours: Owner = { instance: 'default', installation: 'aaaaaaaaaaaaaaaa' };
const unknown: Owner = { instance: 'default', installation: null };
const theirs = 'bbbbbbbbbbbbbbbb';

const labelled = (installation?: string, instance = 'default'): Record<string, string> => ({
  [LABELS.instance]: instance,
  [LABELS.app]: 'shop',
  ...(installation === undefined ? {} : { [LABELS.installation]: installation }),
});

describe('whose an engine object is', () => {
  it('labels objects with the instance and, when known, the installation', () => {
    expect(ownerLabels(ours)).toEqual({ 'svc.instance': 'default', 'svc.installation': 'aaaaaaaaaaaaaaaa' });
    expect(ownerLabels(unknown)).toEqual({ 'svc.instance': 'default' });
  });

  it("takes an object of another installation as foreign, one without an installation label (an earlier version's) as its own", () => {
    expect(isForeign(labelled(theirs), ours)).toBe(true);
    expect(isForeign(labelled(ours.installation ?? ''), ours)).toBe(false);
    expect(isForeign(labelled(), ours)).toBe(false);
    expect(isForeign(undefined, ours)).toBe(false);
    // A scheduler that does not know its installation takes every object of its instance, as before.
    expect(isForeign(labelled(theirs), unknown)).toBe(false);
  });

  it('adopts and removes only objects of its instance that are no other installation\'s', () => {
    expect(isOwnedBy(labelled(ours.installation ?? ''), ours)).toBe(true);
    expect(isOwnedBy(labelled(), ours)).toBe(true);
    expect(isOwnedBy(labelled(theirs), ours)).toBe(false);
    expect(isOwnedBy(labelled(ours.installation ?? '', 'staging'), ours)).toBe(false);
    expect(isOwnedBy({}, ours)).toBe(false);
  });
});

describe('the check of an instance at start-up', () => {
  it('refuses, naming the variable, the first foreign container and the network, when another installation holds the instance', () => {
    const problem = foreignInstanceProblem(ours, [
      { kind: 'container', name: 'svc-c0', labels: labelled() },
      { kind: 'container', name: 'svc-c1', labels: labelled(ours.installation ?? '') },
      { kind: 'container', name: 'svc-c2', labels: labelled(theirs) },
      { kind: 'container', name: 'svc-c3', labels: labelled(theirs) },
      { kind: 'network', name: 'svc-apps', labels: { [LABELS.instance]: 'default', [LABELS.installation]: theirs } },
    ]);
    expect(problem).toBeInstanceOf(InstanceOfAnotherInstallation);
    expect(problem?.setting).toBe('DOCKER_INSTANCE');
    expect(problem?.message).toBe(
      'DOCKER_INSTANCE: the instance "default" on this engine belongs to another installation (container svc-c2, network svc-apps): ' +
        'give this installation its own DOCKER_INSTANCE, DOCKER_NETWORK and DOCKER_BRIDGE',
    );
    expect(problem?.message).not.toContain('\n');
  });

  it('names only what is foreign: a network alone, or containers alone', () => {
    expect(foreignInstanceProblem(ours, [{ kind: 'network', name: 'svc-apps', labels: labelled(theirs) }])?.message).toContain('another installation (network svc-apps):');
    expect(foreignInstanceProblem(ours, [{ kind: 'container', name: 'svc-c2', labels: labelled(theirs) }, { kind: 'network', name: 'svc-apps', labels: {} }])?.message).toContain(
      'another installation (container svc-c2):',
    );
  });

  it('lets the start go on when every object is its own or unlabelled, when there is none, and when its installation is unknown', () => {
    const own = [
      { kind: 'container', name: 'svc-c0', labels: labelled() },
      { kind: 'container', name: 'svc-c1', labels: labelled(ours.installation ?? '') },
      { kind: 'network', name: 'svc-apps', labels: { [LABELS.instance]: 'default' } },
    ];
    expect(foreignInstanceProblem(ours, own)).toBeNull();
    expect(foreignInstanceProblem(ours, [])).toBeNull();
    expect(foreignInstanceProblem(unknown, [{ kind: 'container', name: 'svc-c2', labels: labelled(theirs) }])).toBeNull();
  });

  it('refuses on a swarm naming the first foreign service, and reads nothing when the installation is unknown', async () => {
    const services = [
      { Spec: { Name: 'svc-shop-web', Labels: labelled(ours.installation ?? '') } },
      { Spec: { Name: 'svc-blog-web', Labels: labelled(theirs) } },
    ] as unknown as ServiceInfo[];
    await expect(assertServicesOwned(ours, async () => services)).rejects.toThrow(
      'DOCKER_INSTANCE: the instance "default" on this swarm belongs to another installation (service svc-blog-web): give this installation its own DOCKER_INSTANCE and SWARM_SERVICE_PREFIX',
    );
    await expect(assertServicesOwned(ours, async () => services.slice(0, 1))).resolves.toBeUndefined();
    const list = jest.fn(async () => services);
    await expect(assertServicesOwned(unknown, list)).resolves.toBeUndefined();
    expect(list).not.toHaveBeenCalled();
  });
});

describe('the labels the schedulers write', () => {
  const spec: ContainerSpec = { id: 'c1', app: 'shop', type: 'web', num: 1, release: 3, image: 'shop:3', command: null, env: {}, memory: null, cpu: null, workdir: null };
  const settings: SpecSettings = {
    drainMs: 3000,
    healthIntervalMs: 2000,
    monitorMs: 3000,
    restartDelayMs: 1000,
    network: null,
    base: {
      instance: 'default',
      installation: ours.installation,
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

  it("puts the installation on an app's container, and none when it is unknown", () => {
    expect(containerLabels('default', spec, 'd', ours.installation)).toMatchObject({ 'svc.instance': 'default', 'svc.installation': 'aaaaaaaaaaaaaaaa', 'svc.container': 'c1' });
    expect(containerLabels('default', spec, 'd')).not.toHaveProperty('svc.installation');
  });

  it('puts it on Swarm services and one-off jobs', () => {
    expect(serviceLabels('default', 'shop', 'web', 3, 'd', new Map(), ours.installation)[LABELS.installation]).toBe('aaaaaaaaaaaaaaaa');
    expect(serviceLabels('default', 'shop', 'web', 3, 'd', new Map())).not.toHaveProperty(LABELS.installation);
    const job = jobSpec(settings, 'svc-run-1', { app: 'shop', release: 3, image: 'shop:3', workdir: null, command: 'true', env: {}, timeoutSeconds: 10, outputLimitBytes: 1000 }, 5000, '65534');
    expect(job.Labels).toMatchObject({ 'svc.instance': 'default', 'svc.installation': 'aaaaaaaaaaaaaaaa', 'svc.type': 'run' });
  });
});
