import { authed, type Route, type RouteContext } from '../routing';

/**
 * Where clients reach what the controller serves besides its API, as the application that
 * embeds the HTTP edge knows it once its listeners are bound.
 */
export interface PlatformAddresses {
  /** The scheme and public port of the apps on the router; null when it is not known here. */
  apps: { scheme: 'http' | 'https'; port: number } | null;
  /** The port of the git SSH server; null when there is none. */
  gitPort: number | null;
}

/** No router and no git server known: what an embedding application that passes nothing gets. */
export const NO_ADDRESSES: PlatformAddresses = { apps: null, gitPort: null };

/** `host:port`, or the host alone for the scheme's default port. */
function authority(host: string, scheme: 'http' | 'https', port: number): string {
  return (scheme === 'http' && port === 80) || (scheme === 'https' && port === 443) ? host : `${host}:${port}`;
}

/**
 * `GET /v1/platform`, an extension at every version: the apps' URL (the `url` of an app is a
 * host name by contract, without the router's scheme and port) and the git remote, so that a
 * client links and pushes without being told the router's port by its user.
 */
export function platformRoutes({ platformDomain, platform }: RouteContext): Route[] {
  return [
    authed('get', '/v1/platform', async ({ req, res }) => {
      const { apps, gitPort } = platform();
      // The git server is reached by the name the client used for the API, as the svc CLI does.
      const host = req.hostname;
      res.json({
        platform_domain: platformDomain,
        apps: apps === null ? null : { scheme: apps.scheme, port: apps.port, url_template: `${apps.scheme}://${authority(`{app}.${platformDomain}`, apps.scheme, apps.port)}` },
        git: gitPort === null ? null : { host, port: gitPort, remote_template: `ssh://git@${host}:${gitPort}/{app}.git` },
      });
    }),
  ];
}
