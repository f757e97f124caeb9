/*
 * One cgroup per Dockerfile build, under a parent the platform owns: the engine's classic
 * builder puts every step's container below the cgroup it is given (`cgroupparent`), so the
 * build's `pids.max`, memory and CPU limits hold for that build alone. With user-namespace
 * remapping every build's root is the same host user: a per-user limit (ulimit nproc)
 * would count all builds together, and one tenant's fork bomb would starve the others.
 *
 * The cgroups are made and removed on the engine's machine: here by the controller itself
 * when it runs there as root, otherwise by a helper container (build-cgroups-engine.ts). The
 * engine must use the `cgroupfs` cgroup driver (with the `systemd` driver a parent is a
 * systemd slice, whose limits only systemd sets).
 */
import { randomBytes } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import { access, mkdir, readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where the kernel's control groups are mounted. */
export const CGROUP_ROOT = '/sys/fs/cgroup';

/** The parent of every build's cgroup (`/svc-builds/<build>`). */
export const BUILD_CGROUP_PARENT = 'svc-builds';

/** The period of a CPU quota, in microseconds (the kernel's default). */
const CPU_PERIOD_US = 100_000;

/** The limits of one build, all its steps together. */
export interface BuildCgroupLimits {
  /** The most processes and threads of the build at once (`BUILD_PIDS_LIMIT`). */
  pids: number;
  /** Memory without swap, in bytes. */
  memoryBytes: number;
  /** CPUs (a CFS quota). */
  cpus: number;
}

/** One value to write: a v1 controller's directory (`''` for v2's single hierarchy) and a file of the cgroup. */
export interface CgroupWrite {
  controller: string;
  file: string;
  value: string;
}

/** Which cgroup file system a root holds: one hierarchy (v2) or one per controller (v1). */
export function cgroupVersionAt(root: string): 1 | 2 {
  return existsSync(join(root, 'cgroup.controllers')) ? 2 : 1;
}

/**
 * What to write into a new build cgroup, in order (v1's swap limit after the memory limit
 * it may not be below).
 */
export function buildCgroupWrites(version: 1 | 2, limits: BuildCgroupLimits): CgroupWrite[] {
  const quota = Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US));
  if (version === 2) {
    return [
      { controller: '', file: 'pids.max', value: String(limits.pids) },
      { controller: '', file: 'memory.max', value: String(limits.memoryBytes) },
      { controller: '', file: 'memory.swap.max', value: '0' },
      { controller: '', file: 'cpu.max', value: `${quota} ${CPU_PERIOD_US}` },
    ];
  }
  return [
    { controller: 'pids', file: 'pids.max', value: String(limits.pids) },
    { controller: 'memory', file: 'memory.limit_in_bytes', value: String(limits.memoryBytes) },
    { controller: 'memory', file: 'memory.memsw.limit_in_bytes', value: String(limits.memoryBytes) },
    { controller: 'cpu', file: 'cpu.cfs_period_us', value: String(CPU_PERIOD_US) },
    { controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(quota) },
  ];
}

/** Whether a build cgroup's name is one this module gives (`build-<hex>`). */
export const isBuildCgroupName = (name: string): boolean => /^build-[0-9a-f]{16}$/.test(name);

/** A build's cgroup: the parent the engine is given, and its removal. */
export interface BuildCgroup {
  /** The engine's `cgroupparent` for the build (`/svc-builds/build-…`). */
  readonly parent: string;
  /** Stops what is left in the cgroup and removes it from every hierarchy; waits for the kernel. */
  remove(): Promise<void>;
}

const errnoOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | null)?.code;

/** Whether this process may make cgroups under `root` itself (root, with the host's cgroups mounted writable). */
export async function cgroupsWritable(root: string = CGROUP_ROOT): Promise<boolean> {
  const directory = cgroupVersionAt(root) === 2 ? root : join(root, 'pids');
  try {
    await access(directory, constants.W_OK);
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/** Makes and removes the build cgroups under one root. */
export class BuildCgroups {
  constructor(
    private readonly root: string = CGROUP_ROOT,
    private readonly parentName: string = BUILD_CGROUP_PARENT,
  ) {}

  /**
   * Makes a build's cgroup with its limits.
   * @throws Error when the cgroup cannot be made (the controller is not root, or not on the engine's machine).
   */
  async create(limits: BuildCgroupLimits): Promise<BuildCgroup> {
    const name = `build-${randomBytes(8).toString('hex')}`;
    const version = cgroupVersionAt(this.root);
    const cgroup: BuildCgroup = { parent: `/${this.parentName}/${name}`, remove: () => this.remove(name) };
    try {
      if (version === 2) await this.prepareV2();
      for (const write of buildCgroupWrites(version, limits)) {
        const directory = join(this.root, write.controller, this.parentName, name);
        await mkdir(directory, { recursive: true });
        try {
          await writeFile(join(directory, write.file), write.value);
        } catch (error) {
          // A kernel without swap accounting has no memsw file: the memory limit alone holds.
          if (!(errnoOf(error) === 'ENOENT' && write.file.includes('memsw'))) throw error;
        }
      }
    } catch (error) {
      await cgroup.remove().catch(() => undefined);
      throw error;
    }
    return cgroup;
  }

  /** The names of the build cgroups present under the parent, in any hierarchy. */
  async present(): Promise<string[]> {
    const names = new Set<string>();
    for (const hierarchy of await this.hierarchies()) {
      const entries = await readdir(join(hierarchy, this.parentName), { withFileTypes: true }).catch(() => []);
      for (const entry of entries) if (entry.isDirectory() && isBuildCgroupName(entry.name)) names.add(entry.name);
    }
    return [...names].sort();
  }

  /** v2: the parent exists with the controllers its children need. */
  private async prepareV2(): Promise<void> {
    const parent = join(this.root, this.parentName);
    await mkdir(parent, { recursive: true });
    for (const directory of [this.root, parent]) {
      await writeFile(join(directory, 'cgroup.subtree_control'), '+pids +memory +cpu').catch(() => undefined);
    }
  }

  /** The directories holding cgroups: the root (v2) or each controller's (v1). */
  private async hierarchies(): Promise<string[]> {
    if (cgroupVersionAt(this.root) === 2) return [this.root];
    const entries = await readdir(this.root, { withFileTypes: true }).catch(() => []);
    return entries.filter((entry) => entry.isDirectory()).map((entry) => join(this.root, entry.name));
  }

  private async remove(name: string): Promise<void> {
    const directories = (await this.hierarchies()).map((hierarchy) => join(hierarchy, this.parentName, name)).filter((path) => existsSync(path));
    for (let attempt = 0; ; attempt += 1) {
      let left = 0;
      for (const directory of directories) {
        await killAll(directory);
        left += await removeTree(directory);
      }
      if (left === 0) return;
      if (attempt >= 100) throw new Error(`The build cgroup ${name} still holds processes`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }
}

/** Sends SIGKILL to every process in a cgroup and its children. */
async function killAll(directory: string): Promise<void> {
  const text = await readFile(join(directory, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const pid of text.split('\n').filter((line) => /^\d+$/.test(line))) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await killAll(join(directory, entry.name));
}

/** Removes a cgroup with its children, deepest first; answers how many could not go yet. */
async function removeTree(directory: string): Promise<number> {
  let left = 0;
  const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) left += await removeTree(join(directory, entry.name));
  try {
    await rmdir(directory);
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') left += 1;
  }
  return left;
}
