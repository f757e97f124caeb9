import type { Logger as OrmLogger } from 'typeorm';

/** Where the adapter reports what an operator should know; a pino logger fits. */
export interface DatabaseLogger {
  info(message: string): void;
  warn(message: string): void;
}

/** A logger that drops everything. */
export const SILENT_LOGGER: DatabaseLogger = { info: () => undefined, warn: () => undefined };

const MAX_SQL_IN_LOG = 200;

/**
 * Passes TypeORM's warnings and slow queries on to `logger`. Query parameters are never
 * logged (they hold password hashes and config values); failed queries and migrations are
 * not either, since the error reaches the caller and the facade logs applied migrations.
 */
export class OrmLoggerAdapter implements OrmLogger {
  constructor(private readonly logger: DatabaseLogger) {}

  logQuery(): void {}

  logQueryError(): void {}

  logQuerySlow(time: number, query: string): void {
    this.logger.warn(`Slow database query (${time} ms): ${query.replace(/\s+/g, ' ').slice(0, MAX_SQL_IN_LOG)}`);
  }

  logSchemaBuild(): void {}

  logMigration(): void {}

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
  }
}
