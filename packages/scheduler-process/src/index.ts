export {
  ProcessScheduler,
  RUN_TIMEOUT_EXIT_CODE,
  SCHEDULER_LOG_SOURCE,
  type BackoffOptions,
  type Endpoint,
  type ProcessSchedulerOptions,
} from './process-scheduler';
export type { PortRange } from './ports';
export { formatBytes, memoryLimitBytes, niceForCpuShares } from './limits';
