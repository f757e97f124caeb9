import type { ContainerSpec } from '@svc/core';
import { addressOn, containerDigest, containerLabels, containerName, describeExit, hostConfigOf, runningFromInspection, runningFromListing, type ContainerSettings } from '../src/container-config';

const settings: ContainerSettings = {
  instance: 'default',
  user: '65534:65534',
  pidsLimit: 256,
  readonlyRootfs: false,
  defaultMemory: '1G',
  defaultCpu: 1024,
  logConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
};

const spec: ContainerSpec = {
  id: 'c1',
  app: 'myapp',
  type: 'web',
  num: 1,
  release: 3,
  image: 'registry.local/myapp:v3',
  command: null,
  env: { B: '2', A: '1' },
  memory: '512M',
  cpu: 512,
  workdir: null,
};

describe('the Docker scheduler\'s container configuration', () => {
  it('confines a container and holds it to the app\'s limits, or the defaults', () => {
    const own = hostConfigOf(settings, 'svc-apps', '512M', 512);
    expect(own).toMatchObject({ NetworkMode: 'svc-apps', CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'], PidsLimit: 256, Init: true, RestartPolicy: { Name: 'no' } });
    expect(own).toMatchObject({ Memory: 512 * 1024 ** 2, MemorySwap: 512 * 1024 ** 2, NanoCpus: 5e8, CpuShares: 512 });
    expect(own.Tmpfs).toBeUndefined();
    const defaults = hostConfigOf({ ...settings, readonlyRootfs: true }, 'svc-apps', null, null);
    expect(defaults).toMatchObject({ Memory: 1024 ** 3, NanoCpus: 1e9, ReadonlyRootfs: true, Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=64m' } });
    expect(hostConfigOf({ ...settings, defaultMemory: null, defaultCpu: null }, 'n', null, null)).not.toHaveProperty('Memory');
  });

  it('digests everything a container is made from, not the order its environment was set in', () => {
    const digest = containerDigest(settings, 'svc-apps', spec);
    expect(containerDigest(settings, 'svc-apps', { ...spec, env: { A: '1', B: '2' } })).toBe(digest);
    expect(containerDigest(settings, 'svc-apps', { ...spec, release: 4 })).not.toBe(digest);
    expect(containerDigest(settings, 'other', spec)).not.toBe(digest);
    expect(containerDigest({ ...settings, user: '1000' }, 'svc-apps', spec)).not.toBe(digest);
  });

  it('labels, names and reads a container', () => {
    expect(containerLabels('default', spec, 'd')).toEqual({
      'svc.instance': 'default',
      'svc.app': 'myapp',
      'svc.type': 'web',
      'svc.num': '1',
      'svc.release': '3',
      'svc.container': 'c1',
      'svc.spec': 'd',
    });
    expect(containerName('c1')).toBe('svc-c1');
    const networks = { NetworkSettings: { Networks: { 'svc-apps': { IPAddress: '172.20.0.2' }, other: { IPAddress: '' } } } } as never;
    expect(addressOn(networks, 'svc-apps')).toBe('172.20.0.2');
    expect(addressOn(networks, 'other')).toBeNull();
    expect(addressOn(networks, 'none')).toBeNull();
    const state = (s: object) => ({ State: { OOMKilled: false, Error: '', ExitCode: 0, ...s } }) as never;
    expect(describeExit(state({ OOMKilled: true }), '512M')).toBe('was killed for exceeding its memory limit of 512M (out of memory)');
    expect(describeExit(state({ Error: 'no such file' }), null)).toBe('failed: no such file');
    expect(describeExit(state({ ExitCode: 3 }), null)).toBe('exited with code 3');
  });
  it('reads the same facts for adoption from the engine\'s list as from an inspection', () => {
    const labels = { 'svc.instance': 'default', 'svc.spec': 'd' };
    const listed = {
      Id: 'e1',
      Names: ['/svc-c1'],
      State: 'running',
      Labels: labels,
      Ports: [{ PrivatePort: 5000, Type: 'tcp' }],
      NetworkSettings: { Networks: { 'svc-apps': { IPAddress: '172.20.0.2' } } },
    } as never;
    const inspected = {
      Id: 'e1',
      State: { Running: true },
      Config: { Labels: labels, ExposedPorts: { '5000/tcp': {} } },
      NetworkSettings: { Networks: { 'svc-apps': { IPAddress: '172.20.0.2' } } },
    } as never;
    const expected = { engineId: 'e1', running: true, labels, address: '172.20.0.2', port: 5000 };
    expect(runningFromListing(listed, 'svc-apps')).toEqual(['svc-c1', expected]);
    expect(runningFromInspection(inspected, 'svc-apps')).toEqual(expected);
    // Exited, off the network, exposing nothing.
    const exited = { Id: 'e2', Names: ['/svc-c2'], State: 'exited', Labels: {}, Ports: [], NetworkSettings: { Networks: {} } } as never;
    expect(runningFromListing(exited, 'svc-apps')).toEqual(['svc-c2', { engineId: 'e2', running: false, labels: {}, address: null, port: null }]);
  });
});
