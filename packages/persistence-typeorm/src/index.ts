export { createDatabase, SQLITE_FILE_NAME, type Database, type DatabaseOptions } from './database';
export type { Dialect } from './dialect';
export type { PoolStats } from './engines';
export type { DatabaseLogger } from './logger';
export { TypeOrmUnitOfWork, type RetryPolicy } from './unit-of-work';
export { TypeOrmLogStore, DEFAULT_MAX_LOG_ENTRIES_PER_APP, type TypeOrmLogStoreOptions } from './log-store';
export { DATABASE_UNAVAILABLE, isDatabaseUnavailable, translateUnavailable } from './availability';
export { TypeOrmIdempotencyStore } from './idempotency-store';
export { DatabaseJournalSignal, type JournalSignalOptions } from './journal-signal';
