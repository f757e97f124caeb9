/** The niceness that stands for no CPU preference: the default weight of the kernel's scheduler. */
const DEFAULT_SHARES = 1024;
/** Each niceness step changes the kernel scheduler's weight of a process by about 1.25 times. */
const WEIGHT_PER_NICE_STEP = 1.25;
const MAX_NICE = 19;

/**
 * The niceness that gives a process about `shares`/1024 of the default CPU weight when the
 * machine is busy (0 for no value, 0, or 1024 and more; at most 19). It is a priority, not a cap.
 */
export function niceForCpuShares(shares: number | null): number {
  if (shares === null || !(shares > 0) || shares >= DEFAULT_SHARES) return 0;
  const steps = Math.round(Math.log(DEFAULT_SHARES / shares) / Math.log(WEIGHT_PER_NICE_STEP));
  return Math.min(MAX_NICE, Math.max(0, steps));
}

// Build steps and the source compiler import it from here; the rule is the core's.
export { formatSeconds } from '@svc/core';
