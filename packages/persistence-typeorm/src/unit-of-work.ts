import type { Repositories, UnitOfWork } from '@svc/core';
import { translateUnavailable } from './availability';
import { isRetryable } from './constraints';
import { createRepositories } from './repositories';
import { AutonomousSession, TransactionSession, type Engine } from './session';

/** How often and how patiently a failed transaction is run again. */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The mean pause before the second attempt; it grows linearly and is jittered. */
  baseDelayMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 10 };

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * UnitOfWork on TypeORM. Work runs in one database transaction; it is run again from the
 * start when it fails with ReleaseVersionTaken or the database reports a serialization
 * failure or a deadlock. A database that cannot be reached is reported as the core's
 * Unavailable (DATABASE.UNAVAILABLE).
 */
export class TypeOrmUnitOfWork implements UnitOfWork {
  readonly repositories: Repositories;
  private readonly retry: RetryPolicy;

  constructor(
    private readonly engine: Engine,
    retry: Partial<RetryPolicy> = {},
  ) {
    this.retry = { ...DEFAULT_RETRY, ...retry };
    this.repositories = createRepositories(new AutonomousSession(engine));
  }

  async transaction<T>(work: (repositories: Repositories) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.engine.inTransaction((manager) =>
          work(createRepositories(new TransactionSession(this.engine.dialect, this.engine.schemas, manager))),
        );
      } catch (error) {
        // A lost connection is not retried here: a COMMIT that failed may have committed.
        if (attempt >= this.retry.maxAttempts || !isRetryable(error)) throw translateUnavailable(error);
        // Jitter keeps writers that collided once from colliding again in lockstep.
        await pause(this.retry.baseDelayMs * attempt * (0.5 + Math.random()));
      }
    }
  }
}
