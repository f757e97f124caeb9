import type { AuditEvent, EndpointHealth, EventQuery, IdempotentRequest, StoredResponse, Webhook, WebhookDelivery } from '../model/events';
import type { Page, Slice } from '../model/pagination';

/** The audit journal: append-only, ordered by when each event was appended. */
export interface EventRepository {
  append(event: AuditEvent): Promise<void>;
  /** Events matching the query, newest first. */
  list(query: EventQuery, slice: Slice): Promise<Page<AuditEvent>>;
  /**
   * Events of the app (by its uuid) appended after the event `after` (by uuid), oldest
   * first, at most `limit`. `after` null: from the first. An `after` the journal no longer
   * has (or never had): from the app's newest event on, exclusive.
   */
  after(appUuid: string, after: string | null, limit: number): Promise<AuditEvent[]>;
  /** The uuid of the newest event of the app (by its uuid), null when it has none. */
  newest(appUuid: string): Promise<string | null>;
  /** Deletes events created before `before` (retention); how many were deleted. */
  prune(before: Date): Promise<number>;
}

/** App webhooks. Lists are oldest first. */
export interface WebhookRepository {
  create(webhook: Webhook): Promise<void>;
  find(app: string, uuid: string): Promise<Webhook | null>;
  findByUuid(uuid: string): Promise<Webhook | null>;
  listForApp(app: string, slice: Slice): Promise<Page<Webhook>>;
  /** Every webhook of the app, oldest first. */
  allForApp(app: string): Promise<Webhook[]>;
  countForApp(app: string): Promise<number>;
  /** Deletes the webhook with its deliveries. */
  delete(app: string, uuid: string): Promise<void>;
  /** Deletes the app's webhooks with their deliveries (the app is being deleted). */
  deleteForApp(app: string): Promise<void>;
  /**
   * Claims the webhook until `until` in one atomic statement, unless another caller holds an
   * unexpired claim or its health puts attempts off past `now`: true when this caller got it.
   * The holder alone attempts the webhook's deliveries, so that no two are sent to one
   * receiver at once, by any controller process.
   */
  claim(uuid: string, now: Date, until: Date): Promise<boolean>;
  /** Records the receiver's health after an attempt and releases the claim. */
  release(uuid: string, health: EndpointHealth): Promise<void>;
}

/** A webhook's oldest pending delivery, due now, with the owner of the webhook. */
export interface DueDelivery {
  delivery: WebhookDelivery;
  owner: string;
}

/** Webhook deliveries. Lists are newest first. */
export interface DeliveryRepository {
  create(delivery: WebhookDelivery): Promise<void>;
  listForWebhook(webhook: string, slice: Slice): Promise<Page<WebhookDelivery>>;
  /**
   * Of each webhook that is unclaimed and whose health lets it be attempted at `now`, its
   * oldest pending delivery when that one is due: oldest first, at most `perOwner` of one
   * owner's webhooks (so that one owner's backlog cannot fill the answer), at most `limit`
   * in all. A later delivery of a webhook never comes before an earlier one still pending.
   */
  dueHeads(now: Date, perOwner: number, limit: number): Promise<DueDelivery[]>;
  /** The webhook's oldest pending delivery, due or not; null when none is pending. */
  head(webhook: string): Promise<WebhookDelivery | null>;
  /** Records an attempt's outcome. */
  record(delivery: WebhookDelivery): Promise<void>;
  /** Deletes delivered and failed deliveries created before `before` (retention); how many. */
  prune(before: Date): Promise<number>;
}

/** Requests made with an `Idempotency-Key`, shared by every controller process. */
export interface IdempotencyStore {
  /**
   * Records the request as running unless one with its user and key exists, in one atomic
   * statement; returns null when recorded, else the existing one.
   */
  begin(request: IdempotentRequest): Promise<IdempotentRequest | null>;
  /** Stores the answer of a running request. */
  finish(username: string, key: string, response: StoredResponse): Promise<void>;
  /** Forgets a request (it failed in a way a retry may fix). */
  forget(username: string, key: string): Promise<void>;
  /** Forgets requests created before `before`; how many. */
  prune(before: Date): Promise<number>;
}

/**
 * Tells followers that the journal may have grown. The journal is the source of truth: a
 * signal carries no event, only a reason to read it again (several controller processes
 * share one database).
 */
export interface JournalSignal {
  /** Calls `listener` whenever events may have been appended; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
}

/** The answer of one delivery attempt. */
export interface DeliveryAttempt {
  /** The status code; null when no answer came (refused address, connection failure, timeout). */
  status: number | null;
  /** Why it failed; empty on a 2xx. */
  error: string;
}

/** POSTs webhook deliveries, refusing addresses the operator has not allowed. */
export interface WebhookSender {
  send(url: string, headers: Record<string, string>, body: string): Promise<DeliveryAttempt>;
}

/** Signs delivery bodies: base64 HMAC-SHA256 of the raw body with the secret. */
export interface WebhookSigner {
  sign(secret: string, body: string): string;
}

/** Watches deliveries (metrics); none when absent. */
export interface DeliveryObserver {
  /** One attempt's outcome: `delivered`, `retrying` or `failed`. */
  attempted(outcome: 'delivered' | 'retrying' | 'failed'): void;
}
