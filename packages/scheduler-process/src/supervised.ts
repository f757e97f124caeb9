import { CrashHistory, OutputTail, containerLabel, memoryLimitBytes, type ContainerSpec, type ContainerState, type RestartBackoff } from '@svc/core';
import type { Confinement } from './app-users';
import type { ProcessCgroup } from './container-limits';
import type { ProcessGroup } from './process-group';

/** One container the process scheduler supervises. */
export interface Supervised {
  readonly spec: ContainerSpec;
  /** `web.1 (v3)`: how the scheduler's log lines name it. */
  readonly label: string;
  readonly memoryLimit: number | null;
  cwd: string | null;
  port: number | null;
  state: ContainerState;
  group: ProcessGroup | null;
  launch: Promise<void> | null;
  stopping: boolean;
  stopped: Promise<void> | null;
  /** When it came up and how often it failed in a row: the waits of its restarts. */
  readonly crashes: CrashHistory;
  restartTimer: NodeJS.Timeout | null;
  /** Why the scheduler killed the current process (memory), to report instead of the signal. */
  killedFor: string | null;
  /** The last lines of the current process's output, for the reason of a failure. */
  readonly tail: OutputTail;
  forgotten: boolean;
  /** The app's user and its /etc files, once it has them (sandboxed only). */
  confinement: Confinement | null;
  /** The cgroup of the current process (sandboxed only): its memory, CPU and process limits. */
  cgroup: ProcessCgroup | null;
}

/** A container of the spec that has not started yet. @throws Error when its memory limit is unreadable. */
export function supervised(spec: ContainerSpec, backoff: RestartBackoff): Supervised {
  return {
    spec,
    label: containerLabel(spec),
    memoryLimit: memoryLimitBytes(spec.memory),
    cwd: null,
    port: null,
    state: 'created',
    group: null,
    launch: null,
    stopping: false,
    stopped: null,
    crashes: new CrashHistory(backoff),
    restartTimer: null,
    killedFor: null,
    tail: new OutputTail(),
    forgotten: false,
    confinement: null,
    cgroup: null,
  };
}

/** One one-off command being run. */
export interface OneOff {
  readonly id: string;
  readonly app: string;
  readonly ownDirectory: boolean;
  group: ProcessGroup | null;
}
