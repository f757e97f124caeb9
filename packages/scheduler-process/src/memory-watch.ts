import { formatBytes } from '@svc/core';
import { outOfMemory } from './container-limits';
import { groupResidentBytes } from './proc';
import type { ProcessGroup } from './process-group';
import type { Supervised } from './supervised';

/**
 * Kills a container over its memory, polling while any container is watched: one whose cgroup
 * saw the kernel kill a process for want of memory (the rest of it goes too, as on an
 * engine), or one without a cgroup (unconfined) whose processes hold more than its limit.
 */
export class MemoryWatch {
  private timer: NodeJS.Timeout | null = null;
  private measuring = false;

  constructor(
    private readonly pollMs: number,
    private readonly canMeasure: boolean,
    private readonly containers: () => Iterable<Supervised>,
    private readonly event: (app: string, message: string) => void,
  ) {}

  /** Starts polling, unless it already does or memory cannot be measured here. */
  start(): void {
    if (this.timer !== null || !this.canMeasure) return;
    this.timer = setInterval(() => void this.measure(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private async measure(): Promise<void> {
    if (this.measuring) return;
    const watched = [...this.containers()].filter((c) => (c.memoryLimit !== null || c.cgroup !== null) && c.group !== null && !c.stopping && c.killedFor === null);
    if (watched.length === 0) {
      this.stop();
      return;
    }
    this.measuring = true;
    try {
      const plain = watched.filter((c) => c.cgroup === null);
      const totals = await groupResidentBytes(new Set(plain.map((c) => (c.group as ProcessGroup).pid)));
      for (const container of watched) {
        const group = container.group;
        if (group === null || container.stopping) continue;
        if (container.cgroup !== null) {
          const oom = await outOfMemory(container.cgroup);
          if (oom === null || container.group !== group || container.stopping) continue;
          container.killedFor = oom;
          this.event(container.spec.app, `${container.label} ran out of memory (a process of it ${oom}): killing it`);
          group.signal('SIGKILL');
          continue;
        }
        const used = totals.get(group.pid) ?? 0;
        if (container.memoryLimit === null || used <= container.memoryLimit) continue;
        container.killedFor = `exceeded its memory limit of ${container.spec.memory ?? ''} (${formatBytes(used)} resident) and was killed`;
        this.event(container.spec.app, `${container.label} is over its memory limit of ${container.spec.memory ?? ''} (${formatBytes(used)} resident): killing it`);
        group.signal('SIGKILL');
      }
    } finally {
      this.measuring = false;
    }
  }
}
