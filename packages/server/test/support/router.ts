import { request } from 'node:http';

/** What the engine schedulers' end-to-end runs share of their environment: no git server, a router on any port, quiet logs. */
export const ENGINE_E2E_ENV = {
  HEALTHCHECK_TIMEOUT: '30',
  PROCESS_STOP_TIMEOUT_SECONDS: '2',
  GIT_SSH_PORT: 'off',
  ROUTER_PORT: '0',
  LOG_LEVEL: 'silent',
  HOST: '127.0.0.1',
  PORT: '0',
} as const;

/** One GET through the router on 127.0.0.1:`port` to `<app>.localhost`; status 0 (and the error) when no answer came. */
export function viaRouter(port: number, app: string, path = '/'): Promise<{ status: number; text: string; error?: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { Host: `${app}.localhost` }, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', (error) => resolve({ status: 0, text, error: error.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error) => resolve({ status: 0, text: '', error: error.message }));
    req.end();
  });
}
