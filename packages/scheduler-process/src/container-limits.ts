import { randomUUID } from 'node:crypto';
import { formatBytes } from '@svc/core';
import type { Cgroup } from './cgroups';
import { waitUntilGone, type ProcessGroup } from './process-group';
import type { Sandbox } from './sandbox';

/** A cgroup made for one process (a container's, a one-off command's, a build step's) and the memory limit it holds it to. */
export interface ProcessCgroup {
  readonly cgroup: Cgroup;
  /** The memory limit in force, in bytes; null for none. */
  readonly memoryBytes: number | null;
}

/**
 * Makes the cgroup of one sandboxed process (`<kind>-<random>`), with its own memory (bytes)
 * and CPU (1024 = one CPU), or the sandbox's defaults where it has none; null without a sandbox.
 */
export async function processCgroup(sandbox: Sandbox | null, kind: string, memoryBytes: number | null, cpu: number | null): Promise<ProcessCgroup | null> {
  if (sandbox === null) return null;
  const limits = sandbox.cgroupLimits(memoryBytes, cpu);
  const cgroup = await sandbox.cgroups.create(`${kind}-${randomUUID()}`, limits);
  return { cgroup, memoryBytes: limits.memoryBytes };
}

/**
 * Why the kernel killed processes of the cgroup, when it did: `was killed for using more than
 * its memory limit of 1.0 GiB (out of memory)`; null when it killed none.
 */
export async function outOfMemory(own: ProcessCgroup | null): Promise<string | null> {
  if (own === null || (await own.cgroup.oomKills()) === 0) return null;
  const limit = own.memoryBytes === null ? 'memory' : `memory limit of ${formatBytes(own.memoryBytes)}`;
  return `was killed for using more than its ${limit} (out of memory)`;
}

/** Removes the cgroup once nothing of the process group is left (in the background). */
export function removeWhenGone(own: ProcessCgroup | null, group: ProcessGroup | null): void {
  if (own === null) return;
  void (async () => {
    if (group !== null) await waitUntilGone(group, 30_000);
    await own.cgroup.remove();
  })();
}
