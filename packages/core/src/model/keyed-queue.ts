/**
 * Runs tasks of one key one after another in arrival order; tasks of different keys run side
 * by side. A task that fails fails its own caller only: the next task of its key still runs.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `task` once every earlier task of `key` has settled, and settles as it does. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const tail = previous.then(() => finished);
    this.tails.set(key, tail);
    await previous;
    try {
      return await task();
    } finally {
      done();
      // The last task of a key leaves no entry behind.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Whether a task of `key` is running or waiting. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /**
   * Resolves once every task queued so far (of `key`, or of every key) has settled; it never
   * rejects, whatever the tasks did.
   */
  async settled(key?: string): Promise<void> {
    if (key !== undefined) {
      await this.tails.get(key);
      return;
    }
    await Promise.all([...this.tails.values()]);
  }

  /** How many keys have a task running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}
