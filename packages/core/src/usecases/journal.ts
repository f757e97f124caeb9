import type { App } from '../model/entities';
import type { AuditEvent, Webhook, WebhookDelivery } from '../model/events';
import type { Repositories } from '../ports/repositories';
import { presentEvent, resourceOf } from '../rules/events';
import type { Actor, CoreDependencies } from './context';

/** What a change says about itself in the journal. */
export interface Change {
  /** `<resource>.<verb>`, e.g. `config.update`. */
  action: string;
  /** The app it is about (its name and uuid); absent or null for account-wide changes. */
  app?: Pick<App, 'id' | 'uuid'> | null;
  /** What within the resource: a username, a domain, a version... */
  target?: string;
  /** One line, never a config value or a secret. */
  summary: string;
}

/** Who made a change: an authenticated actor, or a bare username (a failed login) with its request. */
export type ChangeAuthor = Actor | { username: string; request?: Actor['request'] };

/**
 * Appends the change to the audit journal through `repos` (the transaction of the change
 * itself, so that both are committed or neither) and queues a delivery of it to every
 * webhook of its app subscribed to its resource. `webhooks`, when given, are the app's
 * webhooks as read in that same transaction (a change journaled in several entries reads
 * them once).
 */
export async function journal(
  repos: Repositories,
  deps: Pick<CoreDependencies, 'clock' | 'ids'>,
  author: ChangeAuthor,
  change: Change,
  webhooks?: readonly Webhook[],
): Promise<AuditEvent> {
  const now = deps.clock.now();
  const event: AuditEvent = {
    uuid: deps.ids.uuid(),
    created: now,
    actor: 'user' in author ? author.user.username : author.username,
    action: change.action,
    app: change.app?.id ?? null,
    appUuid: change.app?.uuid ?? null,
    target: change.target ?? '',
    summary: change.summary,
    requestId: author.request?.id ?? '',
    address: author.request?.address ?? '',
  };
  await repos.events.append(event);
  if (event.app !== null) {
    const resource = resourceOf(event.action);
    const payload = JSON.stringify(presentEvent(event));
    for (const webhook of webhooks ?? (await repos.webhooks.allForApp(event.app))) {
      if (!webhook.events.includes(resource)) continue;
      const delivery: WebhookDelivery = {
        uuid: deps.ids.uuid(),
        webhook: webhook.uuid,
        app: event.app,
        event: event.uuid,
        action: event.action,
        payload,
        status: 'pending',
        attempts: 0,
        nextAttempt: now,
        lastCode: null,
        lastAttempt: null,
        lastError: '',
        created: now,
      };
      await repos.deliveries.create(delivery);
    }
  }
  return event;
}
