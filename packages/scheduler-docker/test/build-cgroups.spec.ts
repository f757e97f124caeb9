import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCgroupWrites, cgroupVersionAt, isBuildCgroupName } from '../src/build-cgroups';

describe('a build\'s cgroup', () => {
  const limits = { pids: 64, memoryBytes: 512 * 1024 * 1024, cpus: 1.5 };

  it('on cgroups v1: pids.max, memory without swap, a CPU quota, each in its controller, the swap limit after the memory limit', () => {
    expect(buildCgroupWrites(1, limits)).toEqual([
      { controller: 'pids', file: 'pids.max', value: '64' },
      { controller: 'memory', file: 'memory.limit_in_bytes', value: String(512 * 1024 * 1024) },
      { controller: 'memory', file: 'memory.memsw.limit_in_bytes', value: String(512 * 1024 * 1024) },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '150000' },
    ]);
  });

  it('on cgroups v2: the same limits in the one hierarchy', () => {
    expect(buildCgroupWrites(2, limits)).toEqual([
      { controller: '', file: 'pids.max', value: '64' },
      { controller: '', file: 'memory.max', value: String(512 * 1024 * 1024) },
      { controller: '', file: 'memory.swap.max', value: '0' },
      { controller: '', file: 'cpu.max', value: '150000 100000' },
    ]);
  });

  it('takes the version from the mount: v2 has cgroup.controllers at its root', async () => {
    const root = await mkdtemp(join(tmpdir(), 'svc-cgroup-root-'));
    try {
      expect(cgroupVersionAt(root)).toBe(1);
      await writeFile(join(root, 'cgroup.controllers'), 'cpu memory pids\n');
      expect(cgroupVersionAt(root)).toBe(2);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('is named build-<16 hex digits>; nothing else under the parent is taken for one', () => {
    expect(isBuildCgroupName('build-0123456789abcdef')).toBe(true);
    expect(isBuildCgroupName('build-0123')).toBe(false);
    expect(isBuildCgroupName('docker')).toBe(false);
  });
});
