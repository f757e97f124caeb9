import { ValidationFailed } from '@svc/core';
import { BoundedLineWriter, followRequested, type LineSink } from '../src';

/** A sink that accepts writes until told it is full, and keeps what it was given. */
class FakeSink implements LineSink {
  readonly chunks: string[] = [];
  full = false;
  private drainListeners: Array<() => void> = [];

  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return !this.full;
  }

  once(_event: 'drain', listener: () => void): this {
    this.drainListeners.push(listener);
    return this;
  }

  /** Empties the sink; with `refill`, the next write fills it again at once. */
  drain(refill = false): void {
    this.full = refill;
    const listeners = this.drainListeners;
    this.drainListeners = [];
    for (const listener of listeners) listener();
  }

  get text(): string {
    return this.chunks.join('');
  }

  get waitingForDrain(): number {
    return this.drainListeners.length;
  }
}

const NOW = new Date(Date.UTC(2026, 10, 21, 10, 0, 5));

describe('BoundedLineWriter', () => {
  it('writes each line with its newline while the sink keeps up', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 1024);

    writer.write(['a', 'b']);
    writer.write(['c']);
    writer.write([]);

    expect(sink.chunks).toEqual(['a\nb\n', 'c\n']);
  });

  it('while the sink is congested, queues lines up to the limit and skips the rest; on drain writes the queue, then a marker', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 20, () => NOW);
    sink.full = true;
    writer.write(['first']);
    expect(sink.waitingForDrain).toBe(1);

    writer.write(['0123456789', '01234567']);
    writer.write(['x', 'y', 'z']);

    expect(writer.queuedBytes).toBe(20);
    expect(writer.skippedLines).toBe(3);
    expect(sink.chunks).toEqual(['first\n']);

    sink.drain();

    expect(sink.chunks).toEqual([
      'first\n',
      '0123456789\n01234567\n2026-11-21T10:00:05UTC svc[logs]: 3 lines skipped: the client did not read them in time\n',
    ]);
    expect(writer.queuedBytes).toBe(0);
    expect(writer.skippedLines).toBe(0);
    writer.write(['after']);
    expect(sink.chunks.at(-1)).toBe('after\n');
  });

  it('never holds more than the limit, however much is written while the sink does not drain', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 64 * 1024);
    sink.full = true;
    writer.write(['start']);
    const line = 'x'.repeat(999);

    for (let batch = 0; batch < 200; batch++) {
      writer.write(Array.from({ length: 100 }, () => line));
      expect(writer.queuedBytes).toBeLessThanOrEqual(64 * 1024);
    }

    expect(writer.queuedBytes).toBe(65 * 1000);
    expect(writer.skippedLines).toBe(200 * 100 - 65);
    expect(sink.chunks).toEqual(['start\n']);
  });

  it('once a line is skipped, later lines are skipped too, even when they would fit, so the marker marks the gap', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 10, () => NOW);
    sink.full = true;
    writer.write(['go']);

    writer.write(['12345678', 'too long line', 'a']);
    sink.drain();

    expect(sink.chunks[1]).toBe('12345678\n2026-11-21T10:00:05UTC svc[logs]: 2 lines skipped: the client did not read them in time\n');
  });

  it('counts bytes, not characters: multi-byte lines fill the queue sooner', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 10);
    sink.full = true;
    writer.write(['go']);

    writer.write(['日本語', 'a']);

    expect(writer.queuedBytes).toBe(10);
    expect(writer.skippedLines).toBe(1);
  });

  it('waits for the next drain when writing the queue congests the sink again', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 100);
    sink.full = true;
    writer.write(['one']);
    writer.write(['two']);

    sink.drain(true);
    writer.write(['three']);

    expect(sink.chunks).toEqual(['one\n', 'two\n']);
    expect(sink.waitingForDrain).toBe(1);
    sink.drain();
    expect(sink.text).toBe('one\ntwo\nthree\n');
  });

  it('after close, queued lines are dropped and nothing more is written', () => {
    const sink = new FakeSink();
    const writer = new BoundedLineWriter(sink, 100);
    sink.full = true;
    writer.write(['one']);
    writer.write(['queued']);

    writer.close();
    writer.write(['later']);
    sink.drain();

    expect(sink.chunks).toEqual(['one\n']);
    expect(writer.queuedBytes).toBe(0);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new BoundedLineWriter(new FakeSink(), 0)).toThrow(/limitBytes/);
    expect(() => new BoundedLineWriter(new FakeSink(), 1.5)).toThrow(/limitBytes/);
  });
});

describe('followRequested', () => {
  it.each([
    [undefined, false],
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['false', false],
    ['0', false],
  ])('reads %p as %p', (value, expected) => {
    expect(followRequested(value)).toBe(expected);
  });

  it.each([['yes'], [''], [['true', 'true']]])('refuses %p on field follow', (value) => {
    let error: unknown;
    try {
      followRequested(value);
    } catch (e) {
      error = e;
    }

    expect(error).toBeInstanceOf(ValidationFailed);
    expect((error as ValidationFailed).fields).toEqual({ follow: ['Must be a valid boolean.'] });
  });
});
