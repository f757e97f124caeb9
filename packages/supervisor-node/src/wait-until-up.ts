import { answerOf, isReadyStatus, notReadyReason, probeWaitMs, type ReadinessCheck } from '@svc/core';
import { setTimeout as after } from 'node:timers/promises';
import { acceptsConnections, httpStatus } from './probes';

/** Resolves after `ms` (Node's timers/promises). */
export const sleep = (ms: number): Promise<void> => after(ms);

/** What waiting for one starting container needs from its scheduler. */
export interface UpWait {
  /** How it is found up (see readinessCheck of the core). */
  check: ReadinessCheck;
  /** How long a container of another type than `web` must keep running. */
  settleMs: number;
  /** How long a `web` container has (see startTimeoutOf of the core). */
  timeoutMs: number;
  /** The pause between two checks. */
  probeIntervalMs: number;
  /** Why it can no longer come up (it exited, it was stopped), or null while it still may. */
  failed: () => Promise<Error | null>;
  /** Waits `ms`, or less when the scheduler knows there is no point waiting longer (the process exited). */
  pause: (ms: number) => Promise<void>;
  /** The end of the reason when it is not up in time: its last output (see OutputTail of the core). */
  lastOutput: () => string;
}

/**
 * Resolves once the container is up: a `web` container when its check succeeds before the
 * deadline, another once it has kept running for the settle time.
 * @throws Error with the reason (the failure `failed` reports, or the deadline's) when it is not.
 */
export async function waitUntilUp(wait: UpWait): Promise<void> {
  const { check } = wait;
  if (check.kind === 'settle') {
    await wait.pause(wait.settleMs);
    const failure = await wait.failed();
    if (failure) throw failure;
    return;
  }
  const deadline = Date.now() + wait.timeoutMs;
  let lastAnswer = answerOf(null);
  for (;;) {
    const failure = await wait.failed();
    if (failure) throw failure;
    const timeoutMs = probeWaitMs(deadline, Date.now());
    if (check.kind === 'http') {
      const status = await httpStatus(check.url, timeoutMs);
      if (isReadyStatus(status)) return;
      lastAnswer = answerOf(status);
    } else if (await acceptsConnections(check.host, check.port, timeoutMs)) {
      return;
    }
    if (Date.now() >= deadline) break;
    await wait.pause(wait.probeIntervalMs);
  }
  // An exit is a better reason than the deadline.
  const failure = await wait.failed();
  if (failure) throw failure;
  throw new Error(`${notReadyReason(check, wait.timeoutMs, lastAnswer)}${wait.lastOutput()}`);
}
