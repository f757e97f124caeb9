import { HttpError } from '../http-error';
import { authed, open, type Route, type RouteContext } from '../routing';

/** The API root (for clients recognising a controller), the OpenAPI document, and the health and readiness probes. */
export function probeRoutes({ ready, readyDetails, logger, openApi }: RouteContext): Route[] {
  return [
    authed('get', '/v1', async ({ res }) => {
      res.json({});
    }),
    // The contract is public: clients read it before they have an account.
    open('get', '/v1/openapi.json', async ({ res }) => {
      res.json(openApi());
    }),
    open('get', '/healthz', async ({ res }) => {
      res.json({ status: 'ok' });
    }),
    open('get', '/readyz', async ({ res }) => {
      let isReady: boolean;
      try {
        isReady = await ready();
      } catch (error) {
        // A probe answers; it does not fail. The reason goes to the operator's log.
        logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'readiness check failed');
        isReady = false;
      }
      if (!isReady) throw new HttpError(503, 'The database is not available.');
      // `degraded` (still 200: the database answers, SPEC.md) when the details say apps cannot run, with the reasons.
      res.json({ status: 'ready', ...readyDetails() });
    }),
  ];
}
