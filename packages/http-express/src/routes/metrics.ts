import { createHash, timingSafeEqual } from 'node:crypto';
import { HttpError } from '../http-error';
import { open, type Route } from '../routing';

/** What `GET /metrics` serves, and who may read it. */
export interface MetricsEndpoint {
  /** The metrics now, e.g. in the Prometheus text format, with their content type. */
  scrape: () => Promise<{ contentType: string; body: string }>;
  /** When set, scrapers must send `Authorization: Bearer <token>`; null: anyone who reaches the port may read. */
  token: string | null;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Compares in constant time (over digests, so lengths do not leak either). */
function bearerMatches(header: string | undefined, token: string): boolean {
  const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match !== null && timingSafeEqual(digest(match[1] as string), digest(token));
}

/** `GET /metrics` for a scraper such as Prometheus; no route when the application serves no metrics. */
export function metricsRoutes(endpoint: MetricsEndpoint | undefined): Route[] {
  if (endpoint === undefined) return [];
  return [
    open('get', '/metrics', async ({ req, res }) => {
      if (endpoint.token !== null && !bearerMatches(req.headers.authorization, endpoint.token)) {
        throw new HttpError(401, 'A valid metrics token is required.', { 'WWW-Authenticate': 'Bearer realm="metrics"' });
      }
      const { contentType, body } = await endpoint.scrape();
      res.status(200);
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.end(body);
    }),
  ];
}
