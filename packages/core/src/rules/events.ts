import { ValidationFailed } from '../errors';
import type { AuditEvent, EventQuery } from '../model/events';
import { FieldErrorCollector, bodyObject, optionalString, requiredString } from './fields';

/** The resources a webhook may subscribe to; an event's resource is its action's first part. */
export const WEBHOOK_RESOURCES = Object.freeze(['app', 'build', 'release', 'config', 'scale', 'container', 'domain', 'cert', 'perm']);

/** The resource of an action: `config` for `config.update`. */
export function resourceOf(action: string): string {
  const dot = action.indexOf('.');
  return dot < 0 ? action : action.slice(0, dot);
}

const ACTION_PATTERN = /^[a-z_]+(\.[a-z_]+)?$/;

/**
 * The filters of `GET /v1/events/` from its query string: `app`, `actor`, `action` (a whole
 * action, or a resource to match all of its actions) and `since` (an ISO 8601 instant).
 * @throws ValidationFailed naming every bad filter.
 */
export function parseEventQuery(query: Record<string, unknown>): EventQuery {
  const errors = new FieldErrorCollector();
  const text = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string' || value.length > 255) {
      errors.add(name, 'Enter a single value of at most 255 characters.');
      return undefined;
    }
    return value;
  };
  const result: EventQuery = {};
  const app = text('app');
  const actor = text('actor');
  const action = text('action');
  const since = text('since');
  if (app !== undefined) result.app = app;
  if (actor !== undefined) result.actor = actor;
  if (action !== undefined) {
    if (ACTION_PATTERN.test(action)) result.action = action;
    else errors.add('action', 'Enter an action such as config.update, or a resource such as config.');
  }
  if (since !== undefined) {
    const at = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(since) ? new Date(since) : new Date(NaN);
    if (Number.isNaN(at.getTime())) errors.add('since', 'Enter an ISO 8601 date or instant, e.g. 2026-11-26T12:00:00Z.');
    else result.since = at;
  }
  errors.throwIfAny();
  return result;
}

/** Whether an event matches a query's `action` filter: the same action, or any action of the named resource. */
export function actionMatches(filter: string, action: string): boolean {
  return filter.includes('.') ? filter === action : resourceOf(action) === filter;
}

/** The event as the API and webhook deliveries show it. */
export function presentEvent(event: AuditEvent): Record<string, unknown> {
  return {
    uuid: event.uuid,
    created: event.created.toISOString(),
    actor: event.actor,
    action: event.action,
    app: event.app,
    target: event.target,
    summary: event.summary,
    request_id: event.requestId,
    address: event.address,
  };
}

/** What a new webhook asks for. */
export interface WebhookRequest {
  url: string;
  events: string[];
  /** Absent: one is generated and shown once. */
  secret?: string;
}

const URL_MAX = 2048;

/**
 * Validates `{url, events, secret?}`: an http(s) URL without credentials, a non-empty list
 * of known resources (duplicates dropped), and a secret of 16 to 255 characters.
 * @throws ValidationFailed naming every bad field.
 */
export function parseWebhookRequest(body: unknown): WebhookRequest {
  const input = bodyObject(body);
  const errors = new FieldErrorCollector();
  const url = requiredString(errors, input, 'url', URL_MAX);
  if (url !== undefined) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {
      errors.add('url', 'Enter a valid URL.');
    }
    if (parsed !== null && parsed.protocol !== 'http:' && parsed.protocol !== 'https:') errors.add('url', 'The URL must use http or https.');
    if (parsed !== null && (parsed.username !== '' || parsed.password !== '')) errors.add('url', 'The URL must not carry credentials.');
  }
  const events: string[] = [];
  const raw = input.events;
  if (!Array.isArray(raw) || raw.length === 0) {
    errors.add('events', `Expected a non-empty list of: ${WEBHOOK_RESOURCES.join(', ')}.`);
  } else {
    for (const name of raw) {
      if (typeof name !== 'string' || !WEBHOOK_RESOURCES.includes(name)) {
        errors.add('events', `Unknown event resource ${JSON.stringify(name)}; expected one of ${WEBHOOK_RESOURCES.join(', ')}.`);
      } else if (!events.includes(name)) {
        events.push(name);
      }
    }
  }
  const secret = optionalString(errors, input, 'secret', 255);
  if (secret !== undefined && secret.length < 16) errors.add('secret', 'A secret has at least 16 characters.');
  errors.throwIfAny();
  return secret === undefined ? { url: url!, events } : { url: url!, events, secret };
}

/**
 * The pause before attempt `attempts + 1` of a delivery that failed `attempts` times:
 * `base` seconds doubling with each failure, at most an hour.
 */
export function deliveryRetryDelaySeconds(attempts: number, baseSeconds: number): number {
  return Math.min(3600, baseSeconds * 2 ** Math.max(0, Math.min(attempts - 1, 20)));
}

/** @throws ValidationFailed for a `Last-Event-ID` that is not a uuid. */
export function parseLastEventId(value: string | undefined): string | null {
  if (value === undefined || value.trim() === '') return null;
  const id = value.trim();
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
    throw ValidationFailed.field('Last-Event-ID', 'Expected the id of an event (a uuid).');
  }
  return id.toLowerCase();
}
