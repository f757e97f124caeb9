import { appUrl, publicRouter } from './public-addresses';
import type { ServerConfig } from './config';

/** What the ready line reads of a started controller: its API's URL and the ports it bound. */
export interface StartedAddresses {
  /** The API's URL as bound, e.g. `http://127.0.0.1:8000`. */
  url: string;
  routerPort: number | null;
  routerTlsPort: number | null;
  gitPort: number | null;
  /** The `/readyz` fields: `status: 'degraded'` with `reasons` when apps or builds cannot run. */
  readiness: Record<string, string | string[]>;
}

/** A listening address as a person types it: a wildcard one is reached at the loopback address. */
export function reachableHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === '0.0.0.0' || bare === '') return '127.0.0.1';
  if (bare === '::') return '[::1]';
  return bare.includes(':') ? `[${bare}]` : bare;
}

/**
 * The one plain line a person reads once the controller serves, besides the JSON log: where
 * the API, the dashboard, the apps (through the router, at its public scheme and port when
 * APPS_URL_* say so) and the git remotes are, with the real ports; `<app>` stands for an
 * app's name. A part that is off (the dashboard, the router, the git server) is left out.
 * When apps or builds cannot run it starts with `degraded` instead of `ready`, pointing at
 * the reasons the log gave and `/readyz`.
 */
export function readyLine(config: Pick<ServerConfig, 'dashboard' | 'appsUrl' | 'gitSshHost' | 'settings'>, started: StartedAddresses): string {
  const api = new URL(started.url);
  const base = `${api.protocol}//${reachableHost(api.hostname)}:${api.port}`;
  const router = publicRouter(config.appsUrl, { http: started.routerPort, https: started.routerTlsPort });
  const parts = [
    `API ${base}/`,
    ...(config.dashboard ? [`dashboard ${base}/dashboard/`] : []),
    ...(router === null ? [] : [`apps ${appUrl(`<app>.${config.settings.platformDomain}`, router)}/`]),
    ...(started.gitPort === null ? [] : [`git ssh://git@${reachableHost(config.gitSshHost)}:${started.gitPort}/<app>.git`]),
  ];
  const reasons = started.readiness.status === 'degraded' ? [started.readiness.reasons ?? []].flat().length : 0;
  const status = reasons === 0 ? 'ready:' : `degraded (${reasons} reason${reasons === 1 ? '' : 's'} in the log above and at ${base}/readyz):`;
  return `${status} ${parts.join('  ')}`;
}
