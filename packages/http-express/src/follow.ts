import { formatTimestamp, ValidationFailed } from '@svc/core';

/** What a follow stream writes to: a Node writable such as an HTTP response. */
export interface LineSink {
  /** Returns false when the sink's own buffer is full; `drain` is emitted once it empties. */
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/** The default cap of lines held for a client that reads slower than its log grows: 1 MiB. */
export const DEFAULT_FOLLOW_BUFFER_BYTES = 1024 * 1024;

/** The source of the line that tells a follower lines were left out. */
export const FOLLOW_MARKER_SOURCE = 'svc[logs]';

/**
 * Writes log lines (one per line, each ending with a newline) to a sink that may be slower
 * than the log. While the sink is congested, later lines wait in a queue of at most
 * `limitBytes`; a line that does not fit is skipped, and so is every line after it until
 * the sink drains. Then the queue is written, followed by one marker line saying how many
 * lines were skipped, so memory held per follower never exceeds the sink's own buffer plus
 * `limitBytes` plus that marker.
 */
export class BoundedLineWriter {
  private congested = false;
  private queue: string[] = [];
  private queued = 0;
  private skipped = 0;
  private closed = false;

  constructor(
    private readonly sink: LineSink,
    private readonly limitBytes: number = DEFAULT_FOLLOW_BUFFER_BYTES,
    private readonly now: () => Date = () => new Date(),
  ) {
    if (!Number.isInteger(limitBytes) || limitBytes <= 0) throw new Error(`limitBytes must be a positive integer, got ${limitBytes}`);
  }

  /** Bytes of lines waiting for the sink to drain. */
  get queuedBytes(): number {
    return this.queued;
  }

  /** Lines skipped since the sink last drained. */
  get skippedLines(): number {
    return this.skipped;
  }

  /** Writes the lines now, queues them while the sink is congested, or skips what does not fit. */
  write(lines: readonly string[]): void {
    if (this.closed || lines.length === 0) return;
    if (!this.congested) {
      this.send(lines.map((line) => `${line}\n`).join(''));
      return;
    }
    for (const line of lines) {
      const size = Buffer.byteLength(line) + 1;
      // Once one line is skipped, later ones are too: the marker stands where the gap is.
      if (this.skipped === 0 && this.queued + size <= this.limitBytes) {
        this.queue.push(line);
        this.queued += size;
      } else {
        this.skipped += 1;
      }
    }
  }

  /** Drops what is queued and ignores later lines (the client went away). */
  close(): void {
    this.closed = true;
    this.queue = [];
    this.queued = 0;
  }

  private send(text: string): void {
    if (this.sink.write(text)) return;
    this.congested = true;
    this.sink.once('drain', () => this.drained());
  }

  private drained(): void {
    this.congested = false;
    if (this.closed) return;
    const lines = this.queue;
    if (this.skipped > 0) lines.push(`${formatTimestamp(this.now())} ${FOLLOW_MARKER_SOURCE}: ${this.skipped} lines skipped: the client did not read them in time`);
    this.queue = [];
    this.queued = 0;
    this.skipped = 0;
    if (lines.length > 0) this.send(lines.map((line) => `${line}\n`).join(''));
  }
}

/**
 * The `follow` query parameter: absent, `false` or `0` → false; `true` or `1` → true (any case).
 * @throws ValidationFailed on field `follow` for anything else, a repeated parameter included.
 */
export function followRequested(value: unknown): boolean {
  if (value === undefined) return false;
  const text = typeof value === 'string' ? value.trim().toLowerCase() : null;
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw ValidationFailed.field('follow', 'Must be a valid boolean.');
}

/** Where a follow stream writes its batches (log lines, events). */
export interface FollowWriter<T> {
  write(batch: T): void;
  close(): void;
}

/**
 * Serves one follow stream: subscribes, keeps the batches that arrive before the stream is
 * open, opens it (`open` writes its head), and ends it once, on the client's close or the
 * server's shutdown, closing the writer and unsubscribing.
 */
export async function serveFollow<T, F extends { unsubscribe(): void }>(
  shutdown: AbortSignal | undefined,
  res: { once(event: 'close', listener: () => void): unknown; end(): unknown },
  subscribe: (deliver: (batch: T) => void) => Promise<F>,
  open: (followed: F, finish: () => void) => FollowWriter<T>,
): Promise<void> {
  let gone = false;
  let writer: FollowWriter<T> | null = null;
  let followed: F | null = null;
  const pending: T[] = [];
  const end = (): void => {
    if (gone) return;
    gone = true;
    writer?.close();
    followed?.unsubscribe();
    shutdown?.removeEventListener('abort', finish);
  };
  const finish = (): void => {
    end();
    res.end();
  };
  res.once('close', end);
  followed = await subscribe((batch) => {
    // Batches may come before the stream is open: they wait their turn.
    if (writer === null) pending.push(batch);
    else writer.write(batch);
  });
  if (gone || shutdown?.aborted === true) {
    finish();
    return;
  }
  shutdown?.addEventListener('abort', finish, { once: true });
  writer = open(followed, finish);
  for (const batch of pending.splice(0)) writer.write(batch);
}
