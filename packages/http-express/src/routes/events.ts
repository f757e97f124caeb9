import type { Request, Response } from 'express';
import { parseLastEventId, presentEvent, type Actor, type FollowedEvents, type Webhook, type WebhookDelivery } from '@svc/core';
import { EventStreamWriter } from '../event-stream';
import { followRequested, serveFollow } from '../follow';
import { authed, type Route, type RouteContext } from '../routing';
import { envelope, pageRequestOf } from '../pagination';
import { AppPath, WebhookPath, pathParams } from '../params';

/** The filters of an event list, from the query string. */
function filtersOf(req: Request): Record<string, unknown> {
  const { app, actor, action, since } = req.query;
  return { app, actor, action, since };
}

function presentWebhook(webhook: Webhook): Record<string, unknown> {
  const { health } = webhook;
  return {
    uuid: webhook.uuid,
    app: webhook.app,
    owner: webhook.owner,
    url: webhook.url,
    events: webhook.events,
    created: webhook.created.toISOString(),
    status: health.status,
    failures: health.failures,
    last_error: health.lastError,
    resumes_at: health.resumesAt === null ? null : health.resumesAt.toISOString(),
  };
}

function presentDelivery(delivery: WebhookDelivery): Record<string, unknown> {
  return {
    uuid: delivery.uuid,
    event: delivery.event,
    action: delivery.action,
    status: delivery.status,
    attempts: delivery.attempts,
    last_code: delivery.lastCode,
    last_attempt: delivery.lastAttempt?.toISOString() ?? null,
    last_error: delivery.lastError,
    next_attempt: delivery.nextAttempt?.toISOString() ?? null,
    created: delivery.created.toISOString(),
  };
}

/** Streams the app's events as Server-Sent Events until the client leaves or the server stops. */
async function followEvents(context: RouteContext, req: Request, res: Response, actor: Actor, id: string): Promise<void> {
  const header = req.headers['last-event-id'];
  const lastEventId = parseLastEventId(typeof header === 'string' ? header : undefined);
  await serveFollow<Parameters<EventStreamWriter['write']>[0], FollowedEvents>(
    context.shutdown,
    res,
    (deliver) => context.useCases.followEvents.execute(actor, id, lastEventId, deliver),
    (_followed, finish) => new EventStreamWriter(res, context.followBufferBytes, finish),
  );
}

/** The audit journal, the live event stream and app webhooks: extensions at every API version. */
export function eventRoutes(context: RouteContext): Route[] {
  const { useCases } = context;
  return [
    authed('get', '/v1/events', async ({ req, res, actor, policy }) => {
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listEvents.execute(actor, filtersOf(req), page), presentEvent));
    }),
    authed('get', '/v1/apps/:id/events', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      if (followRequested(req.query.follow)) {
        await followEvents(context, req, res, actor, id);
        return;
      }
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listAppEvents.execute(actor, id, filtersOf(req), page), presentEvent));
    }),
    authed('get', '/v1/apps/:id/webhooks', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listWebhooks.execute(actor, id, page), presentWebhook));
    }),
    authed('post', '/v1/apps/:id/webhooks', async ({ req, res, actor, body }) => {
      const { id } = pathParams(AppPath, req);
      const { webhook, secret } = await useCases.createWebhook.execute(actor, id, body);
      // The secret is shown this once; it is stored sealed.
      res.status(201).json({ ...presentWebhook(webhook), secret });
    }),
    authed('get', '/v1/apps/:id/webhooks/:uuid', async ({ req, res, actor }) => {
      const { id, uuid } = pathParams(WebhookPath, req);
      res.json(presentWebhook(await useCases.getWebhook.execute(actor, id, uuid)));
    }),
    authed('delete', '/v1/apps/:id/webhooks/:uuid', async ({ req, res, actor }) => {
      const { id, uuid } = pathParams(WebhookPath, req);
      await useCases.deleteWebhook.execute(actor, id, uuid);
      res.status(204).end();
    }),
    authed('get', '/v1/apps/:id/webhooks/:uuid/deliveries', async ({ req, res, actor, policy }) => {
      const { id, uuid } = pathParams(WebhookPath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listDeliveries.execute(actor, id, uuid, page), presentDelivery));
    }),
  ];
}
