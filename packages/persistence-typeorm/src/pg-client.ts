import { Client, type ClientConfig } from 'pg';
import type { DatabaseLogger } from './logger';

/**
 * The pool's connection class: a pg `Client` that reports an error of its connection (the
 * server restarted, the database dropped, an administrator ended the session) to `logger`.
 *
 * A pg client raises such an error as an `error` event; the pool listens only while the client
 * is idle, and TypeORM only while a query runner holds it, so an error in between (a
 * connection lent out by the pool and not yet in a runner's hands) had no listener and ended
 * the whole controller. With this listener, the connection fails its own queries and the pool
 * drops it, as for any broken connection; nothing else stops.
 */
export function reportingClient(logger: DatabaseLogger): typeof Client {
  return class ReportingClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config);
      this.on('error', (error: Error) => logger.warn(`A PostgreSQL connection failed and is dropped: ${error.message}`));
    }
  };
}
