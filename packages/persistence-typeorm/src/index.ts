export { createDatabase, SQLITE_FILE_NAME, type Database, type DatabaseOptions } from './database';
export type { Dialect } from './dialect';
export type { DatabaseLogger } from './logger';
export { TypeOrmUnitOfWork, type RetryPolicy } from './unit-of-work';
