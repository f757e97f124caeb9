import { DomainError, ReleaseVersionTaken } from '../errors';
import type { Repositories, UnitOfWork } from '../ports/repositories';
import { memoryRepositories } from './memory-repositories';
import { type MemoryState, MemoryStore } from './memory-store';

/** How many times a transaction that hit ReleaseVersionTaken is tried again before the error is let through. */
export const MEMORY_TRANSACTION_RETRIES = 5;

/**
 * Every repository port kept in memory, with real transactions: they run one at a time
 * in call order; their writes are visible to their own work only until they commit;
 * a failed one leaves nothing behind; one that fails with ReleaseVersionTaken is run
 * again from the start (up to MEMORY_TRANSACTION_RETRIES times). `repositories` reads
 * and writes the committed rows directly. A transaction must not start another one from
 * inside its work: it would wait for itself.
 */
export class InMemoryUnitOfWork implements UnitOfWork {
  /** Repositories outside any transaction, on the live rows. */
  readonly repositories: Repositories;
  private readonly store = new MemoryStore();
  private queue: Promise<unknown> = Promise.resolve();
  private counts = { committed: 0, rolledBack: 0, attempts: 0 };

  constructor() {
    this.repositories = memoryRepositories(this.store, null);
  }

  /** Queues `work` behind every earlier transaction and runs it atomically. */
  transaction<T>(work: (repositories: Repositories) => Promise<T>): Promise<T> {
    const result = this.queue.then(() => this.runWithRetries(work));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** A deep copy of every committed row, for comparing the state before and after an operation. */
  snapshot(): MemoryState {
    return this.store.snapshot();
  }

  /**
   * Makes the next `count` repository writes (inside or outside transactions) throw
   * `error`, or a generic Error, before they change anything.
   */
  failNextWrites(count: number, error?: Error): void {
    this.store.failNextWrites(count, error);
  }

  /** Transactions committed, rolled back, and attempts made (retries included). */
  get stats(): { committed: number; rolledBack: number; attempts: number } {
    return { ...this.counts };
  }

  private async runWithRetries<T>(work: (repositories: Repositories) => Promise<T>): Promise<T> {
    for (let retry = 0; ; retry++) {
      const transaction = this.store.begin();
      this.counts.attempts++;
      try {
        const value = await work(memoryRepositories(this.store, transaction));
        transaction.commit();
        this.counts.committed++;
        return value;
      } catch (error) {
        transaction.rollback();
        this.counts.rolledBack++;
        if (retry < MEMORY_TRANSACTION_RETRIES && isVersionTaken(error)) continue;
        throw error;
      }
    }
  }
}

function isVersionTaken(error: unknown): boolean {
  return error instanceof ReleaseVersionTaken || (DomainError.is(error) && error.code === 'RELEASE.VERSION_TAKEN');
}
