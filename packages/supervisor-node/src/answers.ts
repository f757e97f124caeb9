/*
 * What a container answers at its endpoints: the bodies of a GET of `/`, for the scheduler
 * contract's probe of the process and Docker schedulers (which endpoints answer, and with
 * which release).
 */
import { request } from 'node:http';

/** Where one container of a type listens, as a scheduler's `endpoints` reports it. */
export interface ListeningAt {
  host: string;
  port: number;
}

/** The body of a GET of `/` at host:port when it answers 200 within `timeoutMs`, else null. */
export function answerAt({ host, port }: ListeningAt, timeoutMs = 3000): Promise<string | null> {
  return new Promise((resolve) => {
    const req = request({ host, port, path: '/', method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.once('end', () => resolve(res.statusCode === 200 ? body.trim() : null));
      res.once('error', () => resolve(null));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', () => resolve(null));
    req.end();
  });
}

/** The bodies of the endpoints that answer (for the scheduler contract's `probe`). */
export async function answersAt(endpoints: readonly ListeningAt[]): Promise<string[]> {
  const bodies = await Promise.all(endpoints.map((endpoint) => answerAt(endpoint)));
  return bodies.filter((body): body is string => body !== null);
}

