import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where the kernel's control groups are mounted. */
export const CGROUP_ROOT = '/sys/fs/cgroup';

/** The controllers a sandbox needs: memory, CPU time, process count. */
const CONTROLLERS = ['memory', 'cpu', 'pids'] as const;

/** The period of a CPU quota, in microseconds (the kernel's default). */
export const CPU_PERIOD_US = 100_000;

/** The limits of one cgroup; null for none. */
export interface CgroupLimits {
  memoryBytes: number | null;
  /** CPU shares: 1024 is one CPU (as the Docker scheduler reads an app's `cpu`); a hard quota. */
  cpuShares: number | null;
  /** The most processes and threads at once. */
  pids: number;
}

/** Which kind of cgroup file system this machine has: one hierarchy (v2), or one per controller (v1). */
export type CgroupVersion = 1 | 2;

/** One value to write: a controller's directory (v1; `''` for v2's single hierarchy) and a file in the cgroup. */
export interface CgroupWrite {
  controller: string;
  file: string;
  value: string;
}

/** The CPU quota in microseconds per `CPU_PERIOD_US` for shares (1024 = one CPU); null for none. */
export function cpuQuotaMicros(shares: number | null): number | null {
  if (shares === null || !(shares > 0)) return null;
  // The kernel takes no quota under 1 ms.
  return Math.max(1000, Math.round((shares / 1024) * CPU_PERIOD_US));
}

/**
 * What to write into a new cgroup for its limits, in order (v1's swap limit after the memory
 * limit it may not be below). No swap: the memory limit is all an app has.
 */
export function cgroupWrites(version: CgroupVersion, limits: CgroupLimits): CgroupWrite[] {
  const quota = cpuQuotaMicros(limits.cpuShares);
  if (version === 2) {
    const writes: CgroupWrite[] = [];
    if (limits.memoryBytes !== null) {
      writes.push({ controller: '', file: 'memory.max', value: String(limits.memoryBytes) });
      writes.push({ controller: '', file: 'memory.swap.max', value: '0' });
    }
    // An out-of-memory kill takes every process of the container, as an engine's would.
    writes.push({ controller: '', file: 'memory.oom.group', value: '1' });
    writes.push({ controller: '', file: 'cpu.max', value: quota === null ? `max ${CPU_PERIOD_US}` : `${quota} ${CPU_PERIOD_US}` });
    writes.push({ controller: '', file: 'pids.max', value: String(limits.pids) });
    return writes;
  }
  const writes: CgroupWrite[] = [];
  if (limits.memoryBytes !== null) {
    writes.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: String(limits.memoryBytes) });
    writes.push({ controller: 'memory', file: 'memory.memsw.limit_in_bytes', value: String(limits.memoryBytes) });
  }
  writes.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(CPU_PERIOD_US) });
  writes.push({ controller: 'cpu', file: 'cpu.cfs_quota_us', value: quota === null ? '-1' : String(quota) });
  writes.push({ controller: 'pids', file: 'pids.max', value: String(limits.pids) });
  return writes;
}

/** The number of out-of-memory kills in the text of v1's `memory.oom_control` or v2's `memory.events`. */
export function parseOomKills(text: string): number {
  const match = /^oom_kill\s+([0-9]+)$/m.exec(text);
  return match ? Number(match[1]) : 0;
}

/** Which cgroup version this machine offers with the memory, cpu and pids controllers, or why none. */
export function detectCgroups(root = CGROUP_ROOT): { version: CgroupVersion } | { problem: string } {
  const v2Controllers = join(root, 'cgroup.controllers');
  if (existsSync(v2Controllers)) {
    const offered = readFileSync(v2Controllers, 'utf8').trim().split(/\s+/);
    const missing = CONTROLLERS.filter((name) => !offered.includes(name));
    if (missing.length === 0) return { version: 2 };
    return { problem: `the cgroup v2 hierarchy at ${root} lacks the controllers ${missing.join(', ')}` };
  }
  const missing = CONTROLLERS.filter((name) => !existsSync(join(root, name, 'cgroup.procs')));
  if (missing.length === 0) return { version: 1 };
  return { problem: `no cgroup hierarchy with the controllers ${missing.join(', ')} is mounted under ${root}` };
}

/** One cgroup of a container or a build step. */
export interface Cgroup {
  /** Its directories, one per hierarchy (one on v2). */
  readonly directories: string[];
  /** The `cgroup.procs` files a process writes its pid to, to enter it (one per hierarchy). */
  readonly procsFiles: string[];
  /** How many processes the kernel killed in it for want of memory. */
  oomKills(): Promise<number>;
  /** Removes it once no process is left in it (tries for a while); a cgroup that is gone is fine. */
  remove(): Promise<void>;
}

/**
 * The cgroups of one controller's sandbox, under `<root>/svc/<instance>` (one directory per
 * controller hierarchy on v1): one per container and build step, made with its limits before
 * the process enters it, removed once it is empty.
 */
export class CgroupTree {
  private detected: { version: CgroupVersion } | { problem: string } | null = null;

  constructor(
    private readonly instance: string,
    private readonly root = CGROUP_ROOT,
  ) {}

  /** Why cgroups cannot be made here, or null when they can. */
  async problem(): Promise<string | null> {
    const found = this.detect();
    if ('problem' in found) return found.problem;
    try {
      const probe = await this.create(`probe-${process.pid}`, { memoryBytes: 64 * 1024 ** 2, cpuShares: 1024, pids: 16 });
      await probe.remove();
      return null;
    } catch (error) {
      return `cgroups cannot be made under ${this.root}: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  /** The cgroup version in use. @throws Error when there is none usable. */
  get version(): CgroupVersion {
    const found = this.detect();
    if ('problem' in found) throw new Error(found.problem);
    return found.version;
  }

  /** Makes the cgroup `name` (a leftover of that name is reused) with `limits`. */
  async create(name: string, limits: CgroupLimits): Promise<Cgroup> {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$/.test(name)) throw new Error(`unusable cgroup name "${name}"`);
    const version = this.version;
    const dirs = new Map<string, string>();
    if (version === 2) {
      await this.enableControllers();
      const dir = join(this.root, 'svc', this.instance, name);
      await mkdir(dir, { recursive: true });
      dirs.set('', dir);
    } else {
      for (const controller of CONTROLLERS) {
        const dir = join(this.root, controller, 'svc', this.instance, name);
        await mkdir(dir, { recursive: true });
        dirs.set(controller, dir);
      }
    }
    const cgroup = new ContainerCgroup(version, dirs);
    try {
      for (const write of cgroupWrites(version, limits)) {
        const dir = dirs.get(write.controller) as string;
        try {
          await writeFile(join(dir, write.file), write.value);
        } catch (error) {
          // Without swap accounting there is no swap limit to set, and no swap to limit.
          if (write.file === 'memory.memsw.limit_in_bytes' || write.file === 'memory.swap.max') continue;
          throw new Error(`${join(dir, write.file)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
        }
      }
    } catch (error) {
      await cgroup.remove();
      throw error;
    }
    return cgroup;
  }

  /** Removes the empty cgroups an earlier controller process left behind. */
  async removeLeftovers(): Promise<void> {
    const found = this.detect();
    if ('problem' in found) return;
    const parents = found.version === 2 ? [join(this.root, 'svc', this.instance)] : CONTROLLERS.map((c) => join(this.root, c, 'svc', this.instance));
    for (const parent of parents) {
      const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) if (entry.isDirectory()) await rmdir(join(parent, entry.name)).catch(() => undefined);
    }
  }

  /** Removes every empty cgroup of this sandbox and its own directory (at shutdown); busy ones stay. */
  async removeAll(): Promise<void> {
    await this.removeLeftovers();
    const found = this.detect();
    if ('problem' in found) return;
    const parents = found.version === 2 ? [join(this.root, 'svc', this.instance)] : CONTROLLERS.map((c) => join(this.root, c, 'svc', this.instance));
    for (const parent of parents) await rmdir(parent).catch(() => undefined);
  }

  private detect(): { version: CgroupVersion } | { problem: string } {
    this.detected ??= detectCgroups(this.root);
    return this.detected;
  }

  /** v2: the controllers are handed down from the root to `svc/<instance>`, whose children use them. */
  private async enableControllers(): Promise<void> {
    const enable = CONTROLLERS.map((c) => `+${c}`).join(' ');
    let dir = this.root;
    for (const part of ['', 'svc', this.instance]) {
      dir = part === '' ? dir : join(dir, part);
      await mkdir(dir, { recursive: true });
      const current = await readFile(join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => '');
      if (CONTROLLERS.every((c) => current.split(/\s+/).includes(c))) continue;
      await writeFile(join(dir, 'cgroup.subtree_control'), enable);
    }
  }
}

class ContainerCgroup implements Cgroup {
  readonly procsFiles: string[];
  readonly directories: string[];

  constructor(
    private readonly version: CgroupVersion,
    private readonly dirs: Map<string, string>,
  ) {
    this.directories = [...dirs.values()];
    this.procsFiles = this.directories.map((dir) => join(dir, 'cgroup.procs'));
  }

  async oomKills(): Promise<number> {
    const file = this.version === 2 ? join(this.dirs.get('') as string, 'memory.events') : join(this.dirs.get('memory') as string, 'memory.oom_control');
    return parseOomKills(await readFile(file, 'utf8').catch(() => ''));
  }

  remove(): Promise<void> {
    return removeCgroupDirectories(this.directories);
  }
}

/**
 * How many processes the kernel killed for want of memory in the cgroup of these directories
 * (`Cgroup.directories`, as recorded by an earlier controller process): v2's `memory.events`
 * or v1's `memory.oom_control`, whichever of them holds one.
 */
export async function oomKillsIn(directories: string[]): Promise<number> {
  let kills = 0;
  for (const dir of directories) {
    for (const file of ['memory.events', 'memory.oom_control']) kills += parseOomKills(await readFile(join(dir, file), 'utf8').catch(() => ''));
  }
  return kills;
}

/** Removes a cgroup's directories once no process is left in them (tries for a while); one that is gone is fine. */
export async function removeCgroupDirectories(directories: string[]): Promise<void> {
  for (const dir of directories) {
    for (let attempt = 0; attempt < 40; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
        // EBUSY: a process is still in it, on its way out.
        await sleep(50);
      }
    }
  }
}
