import { PAGE_QUERY, object, pageOf, type Operation, type Schema } from './openapi-schema';

/*
 * The OpenAPI entries of the extensions: the audit journal, the live event stream, app
 * webhooks and their deliveries. They exist at every API version and change no response of
 * the others; `Idempotency-Key` and the conditional headers are described in EXTENSIONS_DESCRIPTION.
 */

const ISO: Schema = { type: 'string', format: 'date-time' };

const WEBHOOK_PROPERTIES: Record<string, Schema> = {
  uuid: { type: 'string', format: 'uuid' },
  app: { type: 'string' },
  owner: { type: 'string' },
  url: { type: 'string' },
  events: { type: 'array', items: { enum: ['app', 'build', 'release', 'config', 'scale', 'container', 'domain', 'cert', 'perm'] } },
  created: ISO,
  status: {
    enum: ['active', 'failing', 'paused'],
    description: 'The receiver: answering; failing (each next attempt waits its back-off); paused after `WEBHOOK_PAUSE_AFTER_FAILURES` failures in a row.',
  },
  failures: { type: 'integer', description: 'Attempts failed in a row since the last 2xx.' },
  last_error: { type: 'string', description: 'Why the last attempt failed; empty while active.' },
  resumes_at: { type: ['string', 'null'], format: 'date-time', description: 'No attempt before then; null while active.' },
};

export const EVENT_SCHEMAS: Record<string, Schema> = {
  Event: object({
    uuid: { type: 'string', format: 'uuid' },
    created: ISO,
    actor: { type: 'string' },
    action: { type: 'string', description: '`<resource>.<verb>`, e.g. `config.update`, `scale.update`, `user.login_failed`' },
    app: { type: ['string', 'null'] },
    target: { type: 'string' },
    summary: { type: 'string' },
    request_id: { type: 'string' },
    address: { type: 'string' },
  }),
  Webhook: object(WEBHOOK_PROPERTIES),
  CreatedWebhook: object({ ...WEBHOOK_PROPERTIES, secret: { type: 'string', description: 'Shown this once.' } }),
  Delivery: object({
    uuid: { type: 'string', format: 'uuid' },
    event: { type: 'string', format: 'uuid' },
    action: { type: 'string' },
    status: { enum: ['pending', 'delivered', 'failed'] },
    attempts: { type: 'integer', minimum: 0 },
    last_code: { type: ['integer', 'null'] },
    last_attempt: { oneOf: [ISO, { type: 'null' }] },
    last_error: { type: 'string' },
    next_attempt: { oneOf: [ISO, { type: 'null' }] },
    created: ISO,
  }),
};

const FILTERS = [
  { name: 'app', description: 'Only events of this app.', schema: { type: 'string' } },
  { name: 'actor', description: 'Only events of this username.', schema: { type: 'string' } },
  { name: 'action', description: 'An action (`config.update`) or a resource (`config`: all of its actions).', schema: { type: 'string' } },
  { name: 'since', description: 'Only events created at or after this ISO 8601 instant.', schema: { type: 'string' } },
];

export const EVENT_OPERATIONS: Record<string, Operation> = {
  'GET /v1/events': {
    summary: 'The audit journal, newest first (extension)',
    description: 'Administrators see every event; users the events of apps they can see and of their own account.',
    status: 200,
    response: pageOf('Event'),
    query: [...PAGE_QUERY, ...FILTERS],
    tag: 'events',
  },
  'GET /v1/apps/:id/events': {
    summary: "An app's events, newest first; `follow=true` streams new ones as Server-Sent Events (extension)",
    description:
      'With `follow=true` the answer is `text/event-stream`: each event once, in journal order, with its uuid as the SSE `id`, its action as the `event` ' +
      'and its JSON as `data`; a `Last-Event-ID` header resumes after that event. The limits of log followers apply.',
    status: 200,
    response: pageOf('Event'),
    query: [...PAGE_QUERY, ...FILTERS.slice(1), { name: 'follow', description: 'Stream new events as Server-Sent Events.', schema: { type: 'string', enum: ['true', 'false', '1', '0'] } }],
    tag: 'events',
  },
  'GET /v1/apps/:id/webhooks': { summary: "List an app's webhooks (extension)", status: 200, response: pageOf('Webhook'), query: PAGE_QUERY, tag: 'events' },
  'POST /v1/apps/:id/webhooks': {
    summary: 'Add a webhook (extension)',
    description:
      'Deliveries are POSTs of the event as JSON with `Svc-Webhook-Id`, `Svc-Event` and `Svc-Webhook-Hmac-SHA256` (base64 HMAC-SHA256 of the raw body with the secret); ' +
      'retried with back-off for `WEBHOOK_RETRY_HOURS`. The secret is generated when absent and shown once.',
    body: {
      type: 'object',
      properties: { url: { type: 'string' }, events: WEBHOOK_PROPERTIES.events as Schema, secret: { type: 'string', minLength: 16, maxLength: 255 } },
      required: ['url', 'events'],
    },
    status: 201,
    response: 'CreatedWebhook',
    tag: 'events',
  },
  'GET /v1/apps/:id/webhooks/:uuid': { summary: 'Show a webhook (extension)', status: 200, response: 'Webhook', tag: 'events' },
  'DELETE /v1/apps/:id/webhooks/:uuid': { summary: 'Remove a webhook and its deliveries (extension)', status: 204, response: null, tag: 'events' },
  'GET /v1/apps/:id/webhooks/:uuid/deliveries': {
    summary: "A webhook's deliveries, newest first (extension)",
    status: 200,
    response: pageOf('Delivery'),
    query: PAGE_QUERY,
    tag: 'events',
  },
};

export const EXTENSIONS_DESCRIPTION = [
  'Extensions at every version (a client that sends none of their headers sees no difference):',
  'any POST with `Idempotency-Key` (up to 255 characters) is done once per user and key: a repeat with the same body gets the first answer again with',
  '`Idempotent-Replayed: true`, another body with the key is 422, a repeat while the first runs is 409;',
  'GET of an app and of its config send an `ETag` and honour `If-None-Match` (304); POST of config honours `If-Match` with the config\'s tag and POST of',
  'scale with the app\'s (412 with the current `ETag` when it no longer matches).',
].join(' ');
