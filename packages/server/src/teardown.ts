import { ConfigError, loadConfig } from './config';
import { teardownEngine } from './teardown-engine';

/**
 * Takes this installation off its Docker engine, with the controller stopped:
 * `npm run teardown -- --yes`, or `node packages/server/dist/teardown.js --yes` (in the
 * controller's image: `docker compose run --rm --no-deps controller node packages/server/dist/teardown.js --yes`).
 * Without `--yes` it says what it would remove. See teardown-engine.ts.
 */
Promise.resolve()
  .then(() => teardownEngine(loadConfig(), process.argv.slice(2).includes('--yes'), (line) => process.stdout.write(`${line}\n`)))
  .catch((error: unknown) => {
    const prefix = error instanceof ConfigError ? 'Configuration error' : 'Teardown failed';
    process.stderr.write(`${prefix}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
