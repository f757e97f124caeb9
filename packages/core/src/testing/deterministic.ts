import type { Clock, IdGenerator, RandomSource, Timer } from '../ports/services';

/** The instant every ManualClock and every builder starts from. */
export const FAKE_NOW = '2026-11-21T10:00:00.000Z';

/** A timer of a ManualClock: due at an instant, then again every `every` ms when it repeats. */
interface ManualTimerEntry {
  id: number;
  due: number;
  every: number | null;
  task: () => void;
}

/**
 * A clock that only moves when a test moves it, and the timers that run on it: moving it
 * forward runs every sleep and repeating task that falls due on the way, in time order, each
 * at its own instant (as `now()` sees it).
 */
export class ManualClock implements Clock, Timer {
  private current: number;
  private timers: ManualTimerEntry[] = [];
  private nextTimer = 1;

  constructor(start: Date | string = FAKE_NOW) {
    this.current = toMillis(start);
  }

  /** The current instant, as a fresh Date the caller may mutate. */
  now(): Date {
    return new Date(this.current);
  }

  /** Moves the clock to an instant (backwards too; timers run only when it moves forward). */
  set(to: Date | string): void {
    const target = toMillis(to);
    if (target > this.current) this.advance(target - this.current);
    else this.current = target;
  }

  /** Moves the clock forward by `milliseconds`, running the timers that fall due on the way. */
  advance(milliseconds: number): void {
    const target = this.current + milliseconds;
    for (;;) {
      const due = this.timers.filter((t) => t.due <= target).sort((a, b) => a.due - b.due || a.id - b.id)[0];
      if (due === undefined) break;
      this.current = Math.max(this.current, due.due);
      if (due.every === null) this.timers = this.timers.filter((t) => t !== due);
      else due.due += due.every;
      due.task();
    }
    this.current = target;
  }

  /** Moves the clock forward by `seconds`. */
  advanceSeconds(seconds: number): void {
    this.advance(seconds * 1000);
  }

  /** Resolves once the clock has been moved `milliseconds` forward. */
  sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      this.schedule(milliseconds, null, resolve);
    });
  }

  /** Calls `task` each time the clock passes another `milliseconds`, until the returned function is called. */
  every(milliseconds: number, task: () => void): () => void {
    if (!(milliseconds > 0)) throw new RangeError(`A repeating task needs a positive period, got ${milliseconds}`);
    const entry = this.schedule(milliseconds, milliseconds, task);
    return () => {
      this.timers = this.timers.filter((t) => t !== entry);
    };
  }

  /** How many sleeps and repeating tasks are waiting for the clock. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  private schedule(milliseconds: number, every: number | null, task: () => void): ManualTimerEntry {
    const entry: ManualTimerEntry = { id: this.nextTimer++, due: this.current + Math.max(0, milliseconds), every, task };
    this.timers.push(entry);
    return entry;
  }
}

function toMillis(value: Date | string): number {
  const millis = typeof value === 'string' ? Date.parse(value) : value.getTime();
  if (Number.isNaN(millis)) throw new RangeError(`Not a valid instant: ${String(value)}`);
  return millis;
}

/**
 * Issues version-4-shaped UUIDs that count up: `00000000-0000-4000-8000-000000000001`,
 * `...0002`, and so on. `namespace` fills the first group so that two generators in one
 * test never collide.
 */
export class SequentialIdGenerator implements IdGenerator {
  private next: number;
  private readonly prefix: string;

  constructor(options: { start?: number; namespace?: number } = {}) {
    this.next = options.start ?? 1;
    this.prefix = (options.namespace ?? 0).toString(16).padStart(8, '0').slice(-8);
  }

  /** The next identifier of the sequence. */
  uuid(): string {
    const n = this.next++;
    return `${this.prefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
  }

  /** How many identifiers this generator has issued. */
  get issued(): number {
    return this.next - 1;
  }
}

/**
 * A seeded pseudo-random source (mulberry32), so that generated names are the same on
 * every run. `force` makes the next draws return chosen values, e.g. to provoke a name
 * collision.
 */
export class SeededRandom implements RandomSource {
  private state: number;
  private readonly forced: number[] = [];

  constructor(seed = 42) {
    this.state = seed >>> 0;
  }

  /**
   * An integer in [0, maxExclusive).
   * @throws RangeError when maxExclusive is not a positive integer, or a forced value does not fit.
   */
  int(maxExclusive: number): number {
    if (!Number.isInteger(maxExclusive) || maxExclusive <= 0) {
      throw new RangeError(`maxExclusive must be a positive integer, got ${maxExclusive}`);
    }
    const forced = this.forced.shift();
    if (forced !== undefined) {
      if (forced >= maxExclusive) throw new RangeError(`Forced value ${forced} is not below ${maxExclusive}`);
      return forced;
    }
    return Math.floor(this.nextFloat() * maxExclusive);
  }

  /** Queues values that the next calls to `int` return, in order, before the seeded sequence resumes. */
  force(...values: number[]): void {
    for (const value of values) {
      if (!Number.isInteger(value) || value < 0) throw new RangeError(`Forced values must be non-negative integers, got ${value}`);
    }
    this.forced.push(...values);
  }

  private nextFloat(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}
