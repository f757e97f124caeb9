import type { AppsUrlSettings } from './config-public';

/** The scheme and port at which clients reach the apps through the router. */
export interface PublicRouter {
  scheme: 'http' | 'https';
  port: number;
}

/** The ports the router listens on (bound, so never 0); null for a listener that is off. */
export interface RouterListeners {
  http: number | null;
  https: number | null;
}

const DEFAULT_PORTS = { http: 80, https: 443 } as const;

/**
 * Where clients reach the apps: APPS_URL_SCHEME and APPS_URL_PORT when set, else the router's
 * plain HTTP listener (an app's name has no certificate until one is uploaded or obtained),
 * else its HTTPS one. A scheme the router does not listen on itself (TLS ended by a proxy in
 * front) is on that scheme's default port unless APPS_URL_PORT says otherwise. Null when
 * nothing says where: no listener here (the router runs in another controller process) and
 * neither variable set.
 */
export function publicRouter(settings: AppsUrlSettings, listeners: RouterListeners): PublicRouter | null {
  const scheme = settings.scheme ?? (listeners.http !== null ? 'http' : listeners.https !== null ? 'https' : settings.port !== null ? 'http' : null);
  if (scheme === null) return null;
  return { scheme, port: settings.port ?? listeners[scheme] ?? DEFAULT_PORTS[scheme] };
}

/** An app's address on the router: `http://shop.example.com:8080`, without the port when it is the scheme's default. */
export function appUrl(host: string, router: PublicRouter): string {
  return `${router.scheme}://${host}${router.port === DEFAULT_PORTS[router.scheme] ? '' : `:${router.port}`}`;
}
