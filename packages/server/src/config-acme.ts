import { readFileSync } from 'node:fs';
import { DEFAULT_ACME_SETTINGS, type AcmeSettings } from '@svc/core';
import { ConfigError } from './config-values';

/** Let's Encrypt's directories, by the short names ACME_DIRECTORY_URL also accepts. */
export const KNOWN_ACME_DIRECTORIES: Readonly<Record<string, string>> = Object.freeze({
  letsencrypt: 'https://acme-v02.api.letsencrypt.org/directory',
  'letsencrypt-staging': 'https://acme-staging-v02.api.letsencrypt.org/directory',
});

/** Automatic HTTPS (ACME_* settings); null in ServerConfig when ACME_DIRECTORY_URL is unset. */
export interface AcmeConfig {
  /** ACME_DIRECTORY_URL: an RFC 8555 directory (https://), or `letsencrypt` / `letsencrypt-staging`. */
  directory: string;
  /** ACME_EMAIL: the account's contact; null: none. */
  email: string | null;
  /** ACME_CA_FILE, read: PEM certificates trusted for the ACME server's own HTTPS besides the system's (a private or test ACME server). */
  ca: string | null;
  /** ACME_INTERVAL_SECONDS: how often the names are looked at (also right after an app or domain changes). */
  intervalMs: number;
  /** ACME_RENEW_DAYS, ACME_RETRY_BASE_SECONDS, ACME_RETRY_MAX_SECONDS, ACME_LEASE_SECONDS, ACME_CONCURRENCY, ACME_PENDING_PER_USER. */
  settings: AcmeSettings;
}

type Env = Record<string, string | undefined>;
type Integer = (name: string, fallback: number, min: number, max: number) => number;

const value = (env: Env, name: string): string => env[name]?.trim() ?? '';

/** The ACME_* settings; null when ACME_DIRECTORY_URL is empty (automatic HTTPS off). */
export function acmeConfig(env: Env, integer: Integer): AcmeConfig | null {
  const raw = value(env, 'ACME_DIRECTORY_URL');
  if (raw === '') return null;
  const directory = KNOWN_ACME_DIRECTORIES[raw.toLowerCase()] ?? raw;
  let url: URL;
  try {
    url = new URL(directory);
  } catch {
    throw new ConfigError('ACME_DIRECTORY_URL', `must be an https:// URL of an ACME directory, letsencrypt or letsencrypt-staging, got "${raw}"`);
  }
  if (url.protocol !== 'https:') throw new ConfigError('ACME_DIRECTORY_URL', `must be an https:// URL (RFC 8555 requires HTTPS), got "${raw}"`);
  const email = value(env, 'ACME_EMAIL');
  if (email !== '' && !/^[^\s@]+@[^\s@]+$/.test(email)) throw new ConfigError('ACME_EMAIL', `must be an e-mail address, got "${email}"`);
  const caFile = value(env, 'ACME_CA_FILE');
  let ca: string | null = null;
  if (caFile !== '') {
    try {
      ca = readFileSync(caFile, 'utf8');
    } catch (error) {
      throw new ConfigError('ACME_CA_FILE', `cannot be read: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('ACME_CA_FILE', `holds no PEM certificate: ${caFile}`);
  }
  const retryBaseSeconds = integer('ACME_RETRY_BASE_SECONDS', DEFAULT_ACME_SETTINGS.retryBaseSeconds, 1, 24 * 3600);
  return {
    directory: url.toString(),
    email: email === '' ? null : email,
    ca,
    intervalMs: integer('ACME_INTERVAL_SECONDS', 60, 1, 24 * 3600) * 1000,
    settings: {
      renewBeforeSeconds: integer('ACME_RENEW_DAYS', 30, 1, 3650) * 24 * 3600,
      retryBaseSeconds,
      retryMaxSeconds: Math.max(retryBaseSeconds, integer('ACME_RETRY_MAX_SECONDS', DEFAULT_ACME_SETTINGS.retryMaxSeconds, 1, 7 * 24 * 3600)),
      // Longer than one issuance may take (180 s): a lease never runs out under its holder.
      leaseSeconds: integer('ACME_LEASE_SECONDS', DEFAULT_ACME_SETTINGS.leaseSeconds, 200, 3600),
      concurrency: integer('ACME_CONCURRENCY', DEFAULT_ACME_SETTINGS.concurrency, 1, 64),
      pendingPerOwner: integer('ACME_PENDING_PER_USER', DEFAULT_ACME_SETTINGS.pendingPerOwner, 1, 1000),
    },
  };
}
