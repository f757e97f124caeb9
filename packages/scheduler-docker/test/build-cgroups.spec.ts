import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCgroupWrites, cgroupVersionAt, isBuildCgroupName } from '../src/build-cgroups';
import { createCgroupScript, removeCgroupScript } from '../src/build-cgroups-engine';

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

  describe('made by a helper container on the engine', () => {
    /** Runs the script with its mount at `root` instead of the host's cgroups. */
    const runAt = (script: string, root: string): void => {
      execFileSync('sh', ['-c', script.replace('R=/svc-host-cgroup', `R='${root}'`)]);
    };

    it('writes the same limits as the controller would, on a v1 tree and on a v2 tree', async () => {
      const v1 = await mkdtemp(join(tmpdir(), 'svc-cgroup-v1-'));
      const v2 = await mkdtemp(join(tmpdir(), 'svc-cgroup-v2-'));
      try {
        await writeFile(join(v2, 'cgroup.controllers'), 'cpu memory pids\n');
        const script = createCgroupScript('svc-builds', 'build-0123456789abcdef', limits);
        runAt(script, v1);
        runAt(script, v2);
        for (const write of buildCgroupWrites(1, limits)) {
          expect((await readFile(join(v1, write.controller, 'svc-builds', 'build-0123456789abcdef', write.file), 'utf8')).trim()).toBe(write.value);
        }
        for (const write of buildCgroupWrites(2, limits)) {
          expect((await readFile(join(v2, 'svc-builds', 'build-0123456789abcdef', write.file), 'utf8')).trim()).toBe(write.value);
        }
        expect((await readFile(join(v2, 'svc-builds', 'cgroup.subtree_control'), 'utf8')).trim()).toBe('+pids +memory +cpu');
      } finally {
        await rm(v1, { recursive: true, force: true });
        await rm(v2, { recursive: true, force: true });
      }
    });

    it('removes the cgroup from every hierarchy, deepest first', async () => {
      const v1 = await mkdtemp(join(tmpdir(), 'svc-cgroup-rm-'));
      try {
        // Empty directories stand for cgroups (whose files go with them); another build's stays.
        for (const controller of ['pids', 'memory', 'cpuset']) await mkdir(join(v1, controller, 'svc-builds', 'build-0123456789abcdef', 'step'), { recursive: true });
        await mkdir(join(v1, 'pids', 'svc-builds', 'build-fedcba9876543210'), { recursive: true });
        runAt(removeCgroupScript('svc-builds', 'build-0123456789abcdef'), v1);
        for (const controller of ['pids', 'memory', 'cpuset']) {
          await expect(readFile(join(v1, controller, 'svc-builds', 'build-0123456789abcdef'))).rejects.toMatchObject({ code: 'ENOENT' });
        }
        await expect(mkdir(join(v1, 'pids', 'svc-builds', 'build-fedcba9876543210'))).rejects.toMatchObject({ code: 'EEXIST' });
      } finally {
        await rm(v1, { recursive: true, force: true });
      }
    });
  });
});
