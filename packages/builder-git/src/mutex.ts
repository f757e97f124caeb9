/** One lock per key: work on one key runs one at a time, in arrival order; different keys do not wait for each other. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Whether work on `key` is running or waiting. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Runs `work` once every earlier work on `key` has finished. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => done);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
