/** A first-come, first-served async lock: one holder at a time, waiters in arrival order. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private queued = 0;

  /** Whether a holder runs now. */
  get held(): boolean {
    return this.queued > 0;
  }

  /** Callers waiting for the lock (the holder not included). */
  get waiting(): number {
    return Math.max(0, this.queued - 1);
  }

  /** Runs `critical` once every earlier holder has finished, and releases the lock after it settles. */
  async run<T>(critical: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.queued += 1;
    await previous;
    try {
      return await critical();
    } finally {
      this.queued -= 1;
      release();
    }
  }
}
