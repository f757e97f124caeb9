import type { Clock, IdGenerator, RandomSource } from '../ports/services';

/** The instant every ManualClock and every builder starts from. */
export const FAKE_NOW = '2026-11-21T10:00:00.000Z';

/** A clock that only moves when a test moves it. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | string = FAKE_NOW) {
    this.current = toMillis(start);
  }

  /** The current instant, as a fresh Date the caller may mutate. */
  now(): Date {
    return new Date(this.current);
  }

  /** Moves the clock to an instant (backwards too). */
  set(to: Date | string): void {
    this.current = toMillis(to);
  }

  /** Moves the clock forward by `milliseconds`. */
  advance(milliseconds: number): void {
    this.current += milliseconds;
  }

  /** Moves the clock forward by `seconds`. */
  advanceSeconds(seconds: number): void {
    this.advance(seconds * 1000);
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
