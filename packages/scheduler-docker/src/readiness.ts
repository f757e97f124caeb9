import { request } from 'node:http';
import { connect } from 'node:net';

/** Whether a TCP connection to host:port is accepted within `timeoutMs`. */
export function acceptsConnections(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (result: boolean): void => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The status of a GET of the URL within `timeoutMs`, or null when there is no answer. */
export function httpStatus(url: string, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (status: number | null): void => {
      if (settled) return;
      settled = true;
      resolve(status);
    };
    const req = request(url, { method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      finish(res.statusCode ?? null);
      req.destroy();
    });
    req.once('timeout', () => {
      req.destroy();
      finish(null);
    });
    req.once('error', () => finish(null));
    req.end();
  });
}

/**
 * The path and query HEALTHCHECK_URL asks for: the value is a path (`/health`) or a URL whose
 * path and query are used. Null when the value is empty.
 */
export function healthcheckPath(value: string | undefined): string | null {
  const text = value?.trim() ?? '';
  if (text === '') return null;
  let path = text;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      const parsed = new URL(text);
      path = `${parsed.pathname}${parsed.search}`;
    } catch {
      path = '/';
    }
  }
  return path.startsWith('/') ? path : `/${path}`;
}

/**
 * Where the health check of a container on host:port asks (see {@link healthcheckPath}); the
 * host is always the container. Null when the value is empty.
 */
export function healthcheckUrl(value: string | undefined, host: string, port: number): string | null {
  const path = healthcheckPath(value);
  if (path === null) return null;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
}
