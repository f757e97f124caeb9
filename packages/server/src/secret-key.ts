import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { generateSecretKey } from '@svc/crypto-node';
import type { Database } from '@svc/persistence-typeorm';
import type { ServerConfig } from './config';

/** The platform version announced in response headers: this package's version. */
export function platformVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * The secret that seals private keys: the configured one, or outside production one
 * generated on first start and kept (mode 0600) in the data directory.
 */
export function resolveSecretKey(config: ServerConfig, logger: Logger): string {
  if (config.secretKey !== null) return config.secretKey;
  const file = join(config.dataDir, 'secret_key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = generateSecretKey();
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  logger.warn({ file }, 'SECRET_KEY is not set: generated one and stored it in the data directory; set SECRET_KEY in production');
  return secret;
}

/**
 * With a shared database and no SECRET_KEY, the key is kept in the database so that every
 * controller process seals with the same one; the first process stores the key it finds in
 * its data directory (from an earlier start) or a new one.
 */
export async function sharedSecretKey(database: Database, dataDir: string, logger: Logger): Promise<string> {
  const file = join(dataDir, 'secret_key');
  const secret = await database.sharedSecret('secret_key', () => (existsSync(file) ? readFileSync(file, 'utf8').trim() : generateSecretKey()));
  logger.warn('SECRET_KEY is not set: using the key generated and stored in the database; set SECRET_KEY in production');
  return secret;
}

