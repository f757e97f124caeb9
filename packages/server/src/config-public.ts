import { ConfigError, integer, text, type Env } from './config-values';

/**
 * Where clients reach the apps, when it is not where the router listens (a proxy or a port
 * mapping in front of it): APPS_URL_SCHEME and APPS_URL_PORT. Null fields are taken from the
 * router's own listeners (public-addresses.ts).
 */
export interface AppsUrlSettings {
  /** APPS_URL_SCHEME: `http` or `https`; null (unset): the scheme of the router's listener. */
  scheme: 'http' | 'https' | null;
  /** APPS_URL_PORT: the public port of that scheme; null (unset): the router's listening port. */
  port: number | null;
}

/** `APPS_URL_SCHEME` and `APPS_URL_PORT`, both empty by default. */
export function appsUrlSettings(env: Env): AppsUrlSettings {
  const scheme = text(env, 'APPS_URL_SCHEME', '').toLowerCase();
  if (scheme !== '' && scheme !== 'http' && scheme !== 'https') throw new ConfigError('APPS_URL_SCHEME', `must be http or https (or empty), got "${scheme}"`);
  const port = integer(env, 'APPS_URL_PORT', 0, 1, 65535);
  return { scheme: scheme === '' ? null : scheme, port: port === 0 ? null : port };
}
