export {
  ProcessScheduler,
  RUN_TIMEOUT_EXIT_CODE,
  SCHEDULER_LOG_SOURCE,
  type BackoffOptions,
  type Endpoint,
  type ProcessSchedulerOptions,
  type SandboxStatus,
} from './process-scheduler';
export type { PortRange } from './ports';
export type { ProcessRecord } from './records';
export { niceForCpuShares } from './limits';
export { APP_MOUNT, DEFAULT_UID_RANGE, type SandboxOptions, type UidRange } from './sandbox';
export { ProcessSourceCompiler, BUILD_PATHS, type ProcessSourceCompilerOptions } from './source-compiler';
export type { LentUser } from './app-users';
export { evictSquatters, type Listener } from './squatters';
export { readStat, type ProcStat } from './proc';
