import type { Logger } from 'pino';
import { ConfigError, loadConfig, type ServerConfig } from './config';

/**
 * The configuration of a process of the platform from its environment, checked further by
 * `check` (which throws ConfigError); a configuration error is printed and the process exits 1.
 */
export function configOrExit(check: (config: ServerConfig) => void = () => undefined): ServerConfig {
  try {
    const config = loadConfig();
    check(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * How a process of the platform (the controller, the router) stops: on SIGTERM or SIGINT it
 * logs that it finishes what is in flight, runs `close` once, however many signals come, and
 * exits 0, or 1 when closing failed. `who` names the process in the log lines (none: the controller).
 */
export function stopOnSignals(logger: Logger, close: () => Promise<unknown>, who: string | null = null): void {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, `${who === null ? '' : `${who} `}shutting down: finishing in-flight requests`);
    close().then(
      () => {
        logger.info(who === null ? 'stopped' : `${who} stopped`);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, `error during ${who === null ? '' : `the ${who}'s `}shutdown`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
