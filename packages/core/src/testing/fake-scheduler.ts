import type { ContainerState } from '../model/entities';
import type { BuildToRun, ContainerSpec, RunResult, RunSpec, Scheduler } from '../ports/services';
import { deepCopy } from './copy';

/** One call the FakeScheduler received, in order, with whether it was made to fail. */
export type SchedulerCall =
  | { method: 'start'; spec: ContainerSpec; failed: boolean }
  | { method: 'stop'; id: string; failed: boolean }
  | { method: 'run'; spec: RunSpec; failed: boolean }
  | { method: 'states'; ids: string[] };

/** A container the FakeScheduler holds as started. */
export interface RunningContainer {
  id: string;
  spec: ContainerSpec;
  state: ContainerState;
}

interface Countdown {
  remaining: number;
  error: () => Error;
}

const injected = (method: string) => (): Error => new Error(`Scheduler ${method} failed (injected)`);

/**
 * A scheduler for core tests: records what was started and stopped, returns a chosen
 * run result, and fails on demand so that tests can check that a failed deploy changes
 * nothing.
 */
export class FakeScheduler implements Scheduler {
  /** How many starts it says it takes at once (see Scheduler.concurrentStarts); absent: one after the other. */
  concurrentStarts?: number;
  /** Every call received, oldest first. */
  readonly calls: SchedulerCall[] = [];
  private readonly containers = new Map<string, RunningContainer>();
  private runResult: (spec: RunSpec) => RunResult = () => ({ exitCode: 0, output: '' });
  private readonly startFailures: Countdown = { remaining: 0, error: injected('start') };
  private readonly runFailures: Countdown = { remaining: 0, error: injected('run') };
  private readonly stopFailures: Countdown = { remaining: 0, error: injected('stop') };
  private readonly startPredicates: Array<{ matches: (spec: ContainerSpec) => boolean; error: () => Error }> = [];
  private readonly holds: Array<{ matches: (spec: ContainerSpec) => boolean; reached: () => void; released: Promise<void> }> = [];
  private readonly refusals: Array<{ matches: (build: BuildToRun) => boolean; reason: string }> = [];
  private readonly checkFailures: Countdown = { remaining: 0, error: injected('checkRunnable') };
  /** Every build `checkRunnable` was asked about, oldest first (kept apart from `calls`). */
  readonly checked: BuildToRun[] = [];

  /**
   * Records the container as up, unless a failure was injected for it; a start held by
   * `holdStartsOf` first waits until the hold is released.
   */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    for (const hold of this.holds.filter((h) => h.matches(spec))) {
      hold.reached();
      await hold.released;
    }
    const predicate = this.startPredicates.find((p) => p.matches(spec));
    const failure = predicate?.error ?? take(this.startFailures);
    this.calls.push({ method: 'start', spec: deepCopy(spec), failed: failure !== null });
    if (failure !== null) throw failure();
    // Map.set on a known id keeps its place, so running() stays in order of first start.
    this.containers.set(spec.id, { id: spec.id, spec: deepCopy(spec), state: 'up' });
    return 'up';
  }

  /** Forgets the container; unknown ids are fine, as the port requires. */
  async stop(id: string): Promise<void> {
    const failure = take(this.stopFailures);
    this.calls.push({ method: 'stop', id, failed: failure !== null });
    if (failure !== null) throw failure();
    this.containers.delete(id);
  }

  /** Resolves with the configured result (default exit code 0, no output). */
  async run(spec: RunSpec): Promise<RunResult> {
    const failure = take(this.runFailures);
    this.calls.push({ method: 'run', spec: deepCopy(spec), failed: failure !== null });
    if (failure !== null) throw failure();
    return { ...this.runResult(deepCopy(spec)) };
  }

  /** States of the known containers among `ids`. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    this.calls.push({ method: 'states', ids: [...ids] });
    const result = new Map<string, ContainerState>();
    for (const id of ids) {
      const container = this.containers.get(id);
      if (container) result.set(id, container.state);
    }
    return result;
  }

  /** Null (it runs anything), unless `refuseToRun` named the build, or a failure was injected with `failChecks`. */
  async checkRunnable(build: BuildToRun): Promise<string | null> {
    this.checked.push(deepCopy(build));
    const failure = take(this.checkFailures);
    if (failure !== null) throw failure();
    return this.refusals.find((r) => r.matches(build))?.reason ?? null;
  }

  /** Containers currently started, in the order they were first started. */
  running(): RunningContainer[] {
    return [...this.containers.values()].map(deepCopy);
  }

  /** Specs of every start call that succeeded, oldest first. */
  started(): ContainerSpec[] {
    return this.calls.flatMap((c) => (c.method === 'start' && !c.failed ? [deepCopy(c.spec)] : []));
  }

  /** Ids of every stop call that succeeded, oldest first. */
  stopped(): string[] {
    return this.calls.flatMap((c) => (c.method === 'stop' && !c.failed ? [c.id] : []));
  }

  /** Specs of every run call (failed ones too), oldest first. */
  runs(): RunSpec[] {
    return this.calls.flatMap((c) => (c.method === 'run' ? [deepCopy(c.spec)] : []));
  }

  /** Forgets the call history (not the running containers). */
  clearCalls(): void {
    this.calls.length = 0;
  }

  /** Sets what `run` resolves with: a fixed result or one computed from the spec. */
  setRunResult(result: RunResult | ((spec: RunSpec) => RunResult)): void {
    this.runResult = typeof result === 'function' ? result : () => result;
  }

  /** Changes the reported state of a started container, e.g. to simulate a crash. */
  setState(id: string, state: ContainerState): void {
    const container = this.containers.get(id);
    if (!container) throw new Error(`No started container ${id}`);
    container.state = state;
  }

  /** Makes the next `count` starts throw. */
  failStarts(count: number, error?: Error): void {
    arm(this.startFailures, count, error, 'start');
  }

  /** Makes every start whose spec matches throw, until clearFailures. */
  failStartOf(matches: (spec: ContainerSpec) => boolean, error?: Error): void {
    this.startPredicates.push({ matches, error: error ? () => error : injected('start') });
  }

  /**
   * Holds every start whose spec matches until `release` is called, like a container whose
   * health check takes its time: `reached` resolves when the first such start is waiting.
   */
  holdStartsOf(matches: (spec: ContainerSpec) => boolean): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedPromise = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hold = { matches, reached, released };
    this.holds.push(hold);
    return {
      reached: reachedPromise,
      release: () => {
        this.holds.splice(this.holds.indexOf(hold), 1);
        release();
      },
    };
  }

  /** Makes `checkRunnable` answer `reason` for every build that matches, until clearFailures. */
  refuseToRun(matches: (build: BuildToRun) => boolean, reason: string): void {
    this.refusals.push({ matches, reason });
  }

  /** Makes the next `count` calls of `checkRunnable` throw (the engine failing to answer). */
  failChecks(count: number, error?: Error): void {
    arm(this.checkFailures, count, error, 'checkRunnable');
  }

  /** Makes the next `count` runs throw. */
  failRuns(count: number, error?: Error): void {
    arm(this.runFailures, count, error, 'run');
  }

  /** Makes the next `count` stops throw. */
  failStops(count: number, error?: Error): void {
    arm(this.stopFailures, count, error, 'stop');
  }

  /** Cancels every pending injected failure. */
  clearFailures(): void {
    this.startFailures.remaining = 0;
    this.runFailures.remaining = 0;
    this.stopFailures.remaining = 0;
    this.checkFailures.remaining = 0;
    this.startPredicates.length = 0;
    this.refusals.length = 0;
  }
}

function arm(countdown: Countdown, count: number, error: Error | undefined, method: string): void {
  countdown.remaining = count;
  countdown.error = error ? () => error : injected(method);
}

function take(countdown: Countdown): (() => Error) | null {
  if (countdown.remaining <= 0) return null;
  countdown.remaining--;
  return countdown.error;
}
