/*
 * The audit journal and what hangs off it: app webhooks and their deliveries. Plain data;
 * the rules that build and check them are in rules/events.ts.
 */

/** One change, as the journal keeps it: who did what to which thing, never any config value or secret. */
export interface AuditEvent {
  uuid: string;
  created: Date;
  /** The username of who made the change (for a failed login, the username tried). */
  actor: string;
  /** `<resource>.<verb>`: `config.update`, `scale.update`, `user.login_failed`, ... */
  action: string;
  /** The app the change is about; null for account-wide changes (users, keys, certificates, admins). */
  app: string | null;
  /**
   * The uuid of that app: an app's journal is keyed by it, so an app created again under a
   * deleted one's name does not read the deleted one's events. Null without an app, and for
   * events of apps deleted before the journal recorded uuids.
   */
  appUuid: string | null;
  /** What was changed within the resource: a username, a domain, a version, a process type... */
  target: string;
  summary: string;
  /** The id of the API request that made the change; empty when none (git pushes, start-up). */
  requestId: string;
  /** The client address of that request; empty when unknown. */
  address: string;
}

/** Which events a list shows. Every field narrows it; absent fields do not. */
export interface EventQuery {
  /** The app's name: every app that had it (administrators read the events of deleted apps by it). */
  app?: string;
  /** One app, by its uuid: not an earlier app of the same name. */
  appUuid?: string;
  actor?: string;
  action?: string;
  /** Events created at or after. */
  since?: Date;
  /** Only what this user may see (apps they see, their own account); null or absent: everything. */
  visibleTo?: string | null;
}

/** An app's webhook: where events of the resources it names are POSTed. */
export interface Webhook {
  uuid: string;
  app: string;
  owner: string;
  url: string;
  /** Resources whose events it receives (`app`, `build`, `release`, ...). */
  events: string[];
  /** The signing secret, sealed with the SecretBox. */
  sealedSecret: string;
  created: Date;
  /** How its receiver has been answering lately: what slows or pauses its deliveries. */
  health: EndpointHealth;
}

/**
 * Where a webhook's receiver stands: `active` (answering), `failing` (its last attempts
 * failed: each next one waits its back-off) or `paused` (failed too often in a row: no
 * attempt until `resumesAt`). A 2xx makes it `active` again.
 */
export type EndpointStatus = 'active' | 'failing' | 'paused';

/** A webhook receiver's record of consecutive failures. */
export interface EndpointHealth {
  status: EndpointStatus;
  /** Attempts failed in a row since the last 2xx. */
  failures: number;
  /** Why the last attempt failed; empty while active. */
  lastError: string;
  /** No attempt before this instant (its back-off, or the end of a pause); null while active. */
  resumesAt: Date | null;
}

/** Where a delivery stands: waiting for an attempt, delivered (2xx), or given up. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event to deliver to one webhook, with what its attempts gave. */
export interface WebhookDelivery {
  uuid: string;
  webhook: string;
  app: string;
  /** The event's uuid and action. */
  event: string;
  action: string;
  /** The exact body POSTed (the event as JSON): the signature covers these bytes. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  /** When the next attempt is due; null once delivered or failed. */
  nextAttempt: Date | null;
  /** Status code of the last attempt; null when it got no answer (or none was made). */
  lastCode: number | null;
  lastAttempt: Date | null;
  /** Why the last attempt failed (refused address, timeout, status); empty when it succeeded. */
  lastError: string;
  created: Date;
}

/** A stored answer to a request made with an `Idempotency-Key`. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A request made with an `Idempotency-Key`, per user and key. */
export interface IdempotentRequest {
  username: string;
  key: string;
  /** A digest of the method, path and body: a repeat must have the same. */
  fingerprint: string;
  /** Null while the first request is still running. */
  response: StoredResponse | null;
  created: Date;
}
