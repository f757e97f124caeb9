import { formatBytes } from '@svc/core';
import { formatSeconds } from './limits';
import { LineSplitter, OutputTail, utf8Prefix } from './output';
import { groupResidentBytes, processesByNamespace, residentBytesOf } from './proc';
import { describeExit, spawnGroup, waitUntilGone, type ExitStatus, type ProcessGroup } from './process-group';
import type { SandboxedCommand } from './sandbox';
import { setTimeout as sleep } from 'node:timers/promises';

/** One step of a build (`bin/detect`, `bin/compile` or `bin/release`) to run. */
export interface StepOptions {
  /** The shell command, run under `sh -c` in `cwd` when the step is not sandboxed. */
  command: string;
  cwd: string;
  /** The sandbox command line (command and cwd already in it), or null to run unconfined. */
  sandboxed: SandboxedCommand | null;
  env: Record<string, string>;
  nice: number;
  timeoutMs: number;
  /** What passing `timeoutMs` is called. Default: the step's time limit. */
  timeoutReason?: string;
  /** The most resident memory of all its processes together; null for no limit. */
  memoryLimitBytes: number | null;
  /** The most bytes of output (stdout and stderr together). */
  outputLimitBytes: number;
  /** Receives each line as it is printed. */
  onLine: (line: string, stream: 'stdout' | 'stderr') => void;
  /** How often its memory is measured. Default 500. */
  memoryPollMs?: number;
}

/** How a step ended. */
export interface StepOutcome {
  status: ExitStatus;
  /** The limit it passed and was killed for (`it ran longer than …`), else null. */
  killedFor: string | null;
  /** Its last lines of output (stdout and stderr). */
  tail: OutputTail;
}

/** A step in progress. */
export interface RunningStep {
  readonly done: Promise<StepOutcome>;
  /** Kills every process of the step at once. */
  kill(): void;
}

/** The resident memory of every process of a step: its PID namespace's when sandboxed, else its process group's. */
async function stepResidentBytes(group: ProcessGroup): Promise<number> {
  const namespace = group.namespace();
  if (namespace === null) return (await groupResidentBytes(new Set([group.pid]))).get(group.pid) ?? 0;
  return residentBytesOf((await processesByNamespace()).get(namespace) ?? []);
}

/**
 * Starts a build step and supervises it: killed (all of it) when it runs past its time limit,
 * holds more memory than its limit, or prints more than its output limit. Its output goes to
 * `onLine` line by line. `done` resolves once nothing of it runs; it rejects only when the
 * step cannot be started.
 */
export async function startStep(options: StepOptions): Promise<RunningStep> {
  const lines = { stdout: new LineSplitter(), stderr: new LineSplitter() };
  const tail = new OutputTail();
  let printed = 0;
  let killedFor: string | null = null;
  let group: ProcessGroup | null = null;
  const kill = (reason: string | null): void => {
    if (reason !== null) killedFor ??= reason;
    group?.signal('SIGKILL');
  };
  const emit = (line: string, stream: 'stdout' | 'stderr'): void => {
    tail.push(line);
    options.onLine(line, stream);
  };
  group = await spawnGroup({
    command: options.command,
    cwd: options.cwd,
    env: options.env,
    nice: options.nice,
    sandboxed: options.sandboxed,
    onOutput: (chunk, stream) => {
      if (killedFor !== null) return;
      const room = options.outputLimitBytes - printed;
      printed += chunk.length;
      // The lines up to the limit are still shown: they tell what the step was doing.
      for (const line of lines[stream].push(utf8Prefix(chunk, room))) emit(line, stream);
      if (printed > options.outputLimitBytes) kill(`printed more than its output limit of ${formatBytes(options.outputLimitBytes)}`);
    },
  });
  const started = group;
  const timer = setTimeout(() => kill(options.timeoutReason ?? `ran longer than its time limit of ${formatSeconds(options.timeoutMs)}`), options.timeoutMs);
  let memoryTimer: NodeJS.Timeout | null = null;
  if (options.memoryLimitBytes !== null) {
    const limit = options.memoryLimitBytes;
    let measuring = false;
    memoryTimer = setInterval(() => {
      if (measuring) return;
      measuring = true;
      void stepResidentBytes(started)
        .then((used) => {
          if (used > limit && started.exitStatus() === null) kill(`held more memory than its limit of ${formatBytes(limit)} (${formatBytes(used)} resident)`);
        })
        .finally(() => (measuring = false));
    }, options.memoryPollMs ?? 500);
  }
  const done = (async (): Promise<StepOutcome> => {
    const status = await started.exited;
    clearTimeout(timer);
    if (memoryTimer !== null) clearInterval(memoryTimer);
    const closed = await Promise.race([started.outputClosed.then(() => true), sleep(1000).then(() => false)]);
    if (await started.alive()) {
      started.signal('SIGKILL');
      await waitUntilGone(started, 5000);
    }
    if (!closed) started.detachOutput();
    if (killedFor === null) {
      for (const line of lines.stdout.end()) emit(line, 'stdout');
      for (const line of lines.stderr.end()) emit(line, 'stderr');
    }
    return { status, killedFor, tail };
  })();
  return { done, kill: () => kill('was stopped') };
}

/** Why a step failed, in words: the limit it passed, or how it exited. */
export function describeStepEnd(outcome: StepOutcome): string {
  return outcome.killedFor ?? describeExit(outcome.status);
}
