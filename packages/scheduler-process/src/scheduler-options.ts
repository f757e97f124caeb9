import type { Clock, LogStore, RestartBackoff } from '@svc/core';
import type { PortRange } from './ports';
import type { SandboxOptions } from './sandbox';

/** How long a crashed process waits before it is started again (see the core's RestartBackoff; defaults 1 s, 60 s, 60 s). */
export type BackoffOptions = Partial<RestartBackoff>;

/** How a ProcessScheduler runs processes. */
export interface ProcessSchedulerOptions {
  /** Holds `apps/<app>` (the working directory of builds without files) and `processes/` (records of running process groups). */
  dataDir: string;
  /** Where the output of every process and the scheduler's own events go. */
  logs: Pick<LogStore, 'append'>;
  /** Timestamps of log lines. Default: the system clock. */
  clock?: Clock;
  /** The address processes are reached at (readiness checks, endpoints). Default `127.0.0.1`. */
  host?: string;
  /** Ports handed out as PORT. Default 20000-29999. */
  portRange?: PortRange;
  /**
   * How long a `web` process has to accept connections on its PORT (or to answer its
   * HEALTHCHECK_URL with 2xx) before its start fails. An app's HEALTHCHECK_TIMEOUT (seconds)
   * may shorten it. Default 30000.
   */
  startTimeoutMs?: number;
  /** How long a process of another type must keep running to count as up. Default 1000. */
  settleMs?: number;
  /** How long a stopped process has between SIGTERM and SIGKILL. Default 10000. */
  stopTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** How often the memory of processes with a limit is measured. Default 1000. */
  memoryPollMs?: number;
  /** How often readiness is checked while a process starts. Default 100. */
  probeIntervalMs?: number;
  /**
   * The environment every process starts from, before the release's config values, SVC_APP,
   * SVC_RELEASE, HOME (the working directory) and PORT. Default: a PATH (the controller's
   * without a sandbox, the system's in one) and nothing else, so that the controller's own
   * settings never reach applications.
   */
  baseEnvironment?: Record<string, string>;
  /**
   * How apps are confined: each app's processes as a user of its own, in a bubblewrap sandbox
   * that shows them their own directory and nothing of the controller, with resource limits,
   * and no connection to this machine's addresses but the ports given to `prepare`. Null runs
   * them unconfined as the controller's user: for one trusted developer only.
   */
  sandbox: SandboxOptions | null;
  /**
   * Whether the containers' processes may outlive the controller process (its router runs apart
   * and the next controller process holds them until their replacements serve: `detach`).
   * Unconfined processes always can; a sandbox otherwise dies with the controller process.
   * Default false.
   */
  outliveController?: boolean;
  /** Appended to the reason when the sandbox is wanted but cannot be set up: how the operator fixes it. */
  sandboxHint?: string;
}

/** Whether and how apps are confined, as `prepare` found it. */
export interface SandboxStatus {
  /** `on`: confined; `off`: unconfined by choice (no sandbox options); `unavailable`: wanted but cannot be set up, so nothing runs. */
  mode: 'on' | 'off' | 'unavailable';
  /** Why it is unavailable (with the hint), else null. */
  problem: string | null;
}

/** Where a process of an app can be reached (the core's). */
export type { Endpoint } from '@svc/core';
