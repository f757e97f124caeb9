import { CrashHistory, OutputTail, containerLabel, type ContainerSpec, type ContainerState, type RestartBackoff } from '@svc/core';
import { DEFAULT_CONTAINER_PORT } from './images';

/** One container the Docker scheduler supervises, and the engine container that runs it now. */
export interface Managed {
  readonly spec: ContainerSpec;
  readonly label: string;
  readonly digest: string;
  engineId: string | null;
  address: string | null;
  port: number;
  state: ContainerState;
  stopping: boolean;
  stopped: Promise<void> | null;
  launch: Promise<void> | null;
  readonly crashes: CrashHistory;
  restartTimer: NodeJS.Timeout | null;
  lastLines: OutputTail;
  /** Ends the log stream and the wait of the current engine container. */
  watch: AbortController | null;
  logsEnded: Promise<void> | null;
  /** The engine container that was seen to exit, with its code (the wait may end before the container counts as up). */
  exitSeen: { engineId: string; code: number | null } | null;
  forgotten: boolean;
}

/** A container of the spec that has no engine container yet. */
export function managedContainer(spec: ContainerSpec, digest: string, backoff: RestartBackoff): Managed {
  return {
    spec,
    label: containerLabel(spec),
    digest,
    engineId: null,
    address: null,
    port: DEFAULT_CONTAINER_PORT,
    state: 'created',
    stopping: false,
    stopped: null,
    launch: null,
    crashes: new CrashHistory(backoff),
    restartTimer: null,
    lastLines: new OutputTail(),
    watch: null,
    logsEnded: null,
    exitSeen: null,
    forgotten: false,
  };
}
