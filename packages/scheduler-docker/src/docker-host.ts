import Docker from 'dockerode';

/**
 * A client of the engine at `host`, written as `DOCKER_HOST` is: `unix:///path/to/docker.sock`
 * or `tcp://address:port`.
 * @throws Error for any other form.
 */
export function dockerAt(host: string): Docker {
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  const match = /^tcp:\/\/([^:/]+):([0-9]{1,5})\/?$/.exec(host);
  if (match !== null) return new Docker({ host: match[1], port: Number(match[2]), protocol: 'http' });
  throw new Error(`"${host}" is not an engine address: expected unix:///path/to/docker.sock or tcp://address:port`);
}
