import { request } from 'node:http';
import { connect } from 'node:net';

/** Whether a TCP connection to host:port (a name, an IPv4 or an IPv6 address) is accepted within `timeoutMs`. */
export function acceptsConnections(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: host.replace(/^\[(.*)\]$/, '$1'), port });
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
