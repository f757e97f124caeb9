import pino from 'pino';
import { startServer } from './server';
import { configOrExit, stopOnSignals } from './process-lifecycle';
import { readyLine } from './ready-line';

/** Entry point of the bundled server: read configuration, start, stop cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = pino({ level: config.logLevel, base: undefined });
  const server = await startServer(config, logger);
  logger.info({ url: server.url, database: config.databaseUrl ? 'postgresql' : 'sqlite', scheduler: server.schedulerKind }, `controller listening on ${server.url}`);
  // One plain line for the person who started it, apart from the JSON log on standard output.
  process.stderr.write(`${readyLine(config, { ...server, readiness: server.readiness() })}\n`);

  stopOnSignals(logger, () => server.close());
}

main().catch((error: unknown) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
