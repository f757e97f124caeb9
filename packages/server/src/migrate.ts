import { resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { createDatabase } from '@svc/persistence-typeorm';
import { ConfigError, loadConfig } from './config';

/** Applies pending migrations to the configured database and exits: `npm run migrate`. */
async function migrate(): Promise<void> {
  const config = loadConfig();
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const database = await createDatabase({
    url: config.databaseUrl ?? undefined,
    dataDir,
    poolSize: 1,
    statementTimeoutMs: 0,
    connectRetries: config.dbConnectRetries,
  });
  try {
    await database.migrate();
    process.stdout.write(`Migrations applied to ${database.location}\n`);
  } finally {
    await database.close();
  }
}

migrate().catch((error: unknown) => {
  const prefix = error instanceof ConfigError ? 'Configuration error' : 'Migration failed';
  process.stderr.write(`${prefix}: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
