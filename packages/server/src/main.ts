import pino from 'pino';
import { startServer } from './server';
import { configOrExit, stopOnSignals } from './process-lifecycle';

/** Entry point of the bundled server: read configuration, start, stop cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = pino({ level: config.logLevel, base: undefined });
  const server = await startServer(config, logger);
  logger.info({ url: server.url, database: config.databaseUrl ? 'postgresql' : 'sqlite', scheduler: server.schedulerKind }, `controller listening on ${server.url}`);

  stopOnSignals(logger, () => server.close());
}

main().catch((error: unknown) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
