import type { ContainerSpec, ContainerState, RunResult, RunSpec, Scheduler } from '@svc/core';

/**
 * The faults this wrapper can inject. The core's port has four calls; the container
 * lifecycle steps of other platforms map onto them like this:
 *
 * - `create`: `start()` fails before the wrapped scheduler is called (nothing exists).
 * - `start`: `start()` calls the wrapped scheduler, then fails (the container exists but the
 *   caller is told it did not come up, so the caller must stop it).
 * - `stop`: `stop()` fails before the wrapped scheduler is called (the container keeps running).
 * - `destroy`: `stop()` calls the wrapped scheduler, then fails (the container is gone but
 *   the caller is told its removal failed).
 * - `run`: `run()` fails before the wrapped scheduler is called.
 * - `states`: `states()` fails.
 */
export const CHAOS_OPERATIONS = ['create', 'start', 'stop', 'destroy', 'run', 'states'] as const;

/** One fault the wrapper can inject. */
export type ChaosOperation = (typeof CHAOS_OPERATIONS)[number];

/** Probability from 0 to 1 of each fault, per call; an absent fault never happens. */
export type ChaosRates = Partial<Record<ChaosOperation, number>>;

/** How a ChaosScheduler misbehaves. */
export interface ChaosOptions {
  rates: ChaosRates;
  /** Seed of the random sequence, so that a failing run can be replayed; default 1. */
  seed?: number;
  /** Each call first waits a random time from 0 to this many milliseconds; default 0. */
  latencyMs?: number;
}

/** The error a ChaosScheduler throws when it injects a fault. */
export class ChaosFault extends Error {
  constructor(readonly operation: ChaosOperation) {
    super(`injected ${operation} failure (chaos)`);
    this.name = 'ChaosFault';
  }
}

/** A deterministic pseudo-random generator (mulberry32) of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MAX_LATENCY_MS = 60_000;

function checkRate(operation: string, rate: number): void {
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) {
    throw new RangeError(`the rate of ${operation} must be a number from 0 to 1, got ${rate}`);
  }
}

function emptyCounts(): Record<ChaosOperation, number> {
  return { create: 0, start: 0, stop: 0, destroy: 0, run: 0, states: 0 };
}

/**
 * Wraps any scheduler and makes its calls fail at configurable, seeded rates (and
 * optionally slow), to show that the controller answers 503, changes nothing and stays
 * consistent when its scheduler misbehaves.
 */
export class ChaosScheduler implements Scheduler {
  private current: ChaosRates = {};
  private readonly faultRandom: () => number;
  private readonly latencyRandom: () => number;
  private readonly latencyMs: number;
  private readonly counts = emptyCounts();
  /**
   * The wrapped scheduler's check of a build, when it has one, passed through as it is: no
   * fault is drawn for it, so the sequence of faults of the four calls stays the same.
   */
  readonly checkRunnable?: Scheduler['checkRunnable'];

  constructor(
    readonly inner: Scheduler,
    options: ChaosOptions,
  ) {
    const check = inner.checkRunnable;
    if (check !== undefined) this.checkRunnable = (build) => check.call(inner, build);
    const seed = options.seed ?? 1;
    this.faultRandom = seededRandom(seed);
    // A separate stream, so that turning latency on does not change which calls fail.
    this.latencyRandom = seededRandom(seed ^ 0x9e3779b9);
    const latency = options.latencyMs ?? 0;
    if (!Number.isInteger(latency) || latency < 0 || latency > MAX_LATENCY_MS) {
      throw new RangeError(`latency must be an integer from 0 to ${MAX_LATENCY_MS} ms, got ${latency}`);
    }
    this.latencyMs = latency;
    this.setRates(options.rates);
  }

  /** The failure rates in force. */
  get rates(): Readonly<ChaosRates> {
    return { ...this.current };
  }

  /** Replaces the failure rates (`{}` stops injecting faults; the random sequence goes on). */
  setRates(rates: ChaosRates): void {
    for (const [operation, rate] of Object.entries(rates)) {
      if (!(CHAOS_OPERATIONS as readonly string[]).includes(operation)) throw new RangeError(`unknown operation ${operation}`);
      checkRate(operation, rate as number);
    }
    this.current = { ...rates };
  }

  /** How many faults of each kind were injected so far. */
  get injected(): Readonly<Record<ChaosOperation, number>> {
    return { ...this.counts };
  }

  /** Creates and starts a container through the wrapped scheduler, unless a create or start fault is drawn. */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    await this.delay();
    this.maybeFail('create');
    const state = await this.inner.start(spec);
    this.maybeFail('start');
    return state;
  }

  /** Stops a container through the wrapped scheduler, unless a stop or destroy fault is drawn. */
  async stop(id: string): Promise<void> {
    await this.delay();
    this.maybeFail('stop');
    await this.inner.stop(id);
    this.maybeFail('destroy');
  }

  /** Runs a one-off command through the wrapped scheduler, unless a run fault is drawn. */
  async run(spec: RunSpec): Promise<RunResult> {
    await this.delay();
    this.maybeFail('run');
    return this.inner.run(spec);
  }

  /** Reads states from the wrapped scheduler, unless a states fault is drawn. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    await this.delay();
    this.maybeFail('states');
    return this.inner.states(ids);
  }

  private maybeFail(operation: ChaosOperation): void {
    // Always draw, so that the sequence of decisions does not depend on which rates are set.
    const draw = this.faultRandom();
    const rate = this.current[operation] ?? 0;
    if (draw < rate) {
      this.counts[operation] += 1;
      throw new ChaosFault(operation);
    }
  }

  private async delay(): Promise<void> {
    if (this.latencyMs === 0) return;
    const ms = Math.floor(this.latencyRandom() * (this.latencyMs + 1));
    await new Promise<void>((resolve) => setTimeout(resolve, ms));
  }
}

/**
 * Parses a chaos specification such as `start=0.2,stop=0.1,run=0.5,seed=42,latency=20`:
 * comma-separated `name=value` items, where names are the operations of CHAOS_OPERATIONS
 * (rates from 0 to 1), `seed` (an integer) and `latency` (maximum milliseconds per call).
 * @throws RangeError naming the first item that cannot be used.
 */
export function parseChaosSpec(text: string): ChaosOptions {
  const rates: ChaosRates = {};
  let seed: number | undefined;
  let latencyMs: number | undefined;
  const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw new RangeError('give at least one item, e.g. start=0.2');
  for (const item of items) {
    const match = /^([a-z]+)\s*=\s*(\S+)$/.exec(item);
    if (match === null) throw new RangeError(`"${item}" is not name=value`);
    const [, name, value] = match as unknown as [string, string, string];
    if (name === 'seed') {
      if (!/^[0-9]{1,10}$/.test(value)) throw new RangeError(`seed must be a non-negative integer, got "${value}"`);
      seed = Number(value);
    } else if (name === 'latency') {
      if (!/^[0-9]{1,5}$/.test(value) || Number(value) > MAX_LATENCY_MS) {
        throw new RangeError(`latency must be an integer from 0 to ${MAX_LATENCY_MS} ms, got "${value}"`);
      }
      latencyMs = Number(value);
    } else if ((CHAOS_OPERATIONS as readonly string[]).includes(name)) {
      if (!/^(0|1|0?\.[0-9]+|1\.0*|0\.0*)$/.test(value)) throw new RangeError(`the rate of ${name} must be a number from 0 to 1, got "${value}"`);
      rates[name as ChaosOperation] = Number(value);
    } else {
      throw new RangeError(`unknown item "${name}" (expected one of ${[...CHAOS_OPERATIONS, 'seed', 'latency'].join(', ')})`);
    }
  }
  return { rates, ...(seed === undefined ? {} : { seed }), ...(latencyMs === undefined ? {} : { latencyMs }) };
}
