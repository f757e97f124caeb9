/** A first-come, first-served async lock: one holder at a time, waiters in arrival order. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `critical` once every earlier holder has finished, and releases the lock after it settles. */
  async run<T>(critical: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    try {
      return await critical();
    } finally {
      release();
    }
  }
}
