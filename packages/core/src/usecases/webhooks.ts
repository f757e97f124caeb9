import { NotFound, QuotaExceeded, Unavailable } from '../errors';
import type { Webhook, WebhookDelivery } from '../model/events';
import { assertPageExists, sliceOf, type Page, type PageRequest } from '../model/pagination';
import { parseWebhookRequest, deliveryRetryDelaySeconds } from '../rules/events';
import { loadVisibleApp, type Actor, type CoreDependencies } from './context';
import { journal } from './journal';

/** A webhook as created: the secret in clear, shown this once. */
export interface CreatedWebhook {
  webhook: Webhook;
  secret: string;
}

/** Adds a webhook to an app: whoever may change the app may add one. */
export class CreateWebhook {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids' | 'tokens' | 'secrets' | 'settings'>) {}

  /** @throws ValidationFailed; QuotaExceeded (webhooks per app); NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, body: unknown): Promise<CreatedWebhook> {
    const request = parseWebhookRequest(body);
    // 40 hex characters from a cryptographic source, unless the client chose its own.
    const secret = request.secret ?? `whsec_${this.deps.tokens.generate()}`;
    return this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const limit = this.deps.settings.webhooksPerApp;
      if ((await repos.webhooks.countForApp(app.id)) >= limit) {
        throw new QuotaExceeded('webhooks', limit, `An app may have at most ${limit} webhooks.`);
      }
      const webhook: Webhook = {
        uuid: this.deps.ids.uuid(),
        app: app.id,
        owner: actor.user.username,
        url: request.url,
        events: request.events,
        sealedSecret: this.deps.secrets.seal(secret),
        created: this.deps.clock.now(),
      };
      await repos.webhooks.create(webhook);
      await journal(repos, this.deps, actor, { action: 'app.webhook_create', app, target: webhook.uuid, summary: `${actor.user.username} added a webhook to ${new URL(webhook.url).host}` });
      return { webhook, secret };
    });
  }
}

/** The webhooks of an app. */
export class ListWebhooks {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound (app, or a page past the end), AppNotVisible */
  async execute(actor: Actor, appId: string, page: PageRequest): Promise<Page<Webhook>> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const result = await repos.webhooks.listForApp(app.id, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

async function loadWebhook(deps: Pick<CoreDependencies, 'uow'>, actor: Actor, appId: string, uuid: string): Promise<Webhook> {
  const repos = deps.uow.repositories;
  const app = await loadVisibleApp(repos, actor, appId);
  const webhook = await repos.webhooks.find(app.id, uuid.toLowerCase());
  if (!webhook) throw new NotFound('WEBHOOK.NOT_FOUND');
  return webhook;
}

/** One webhook of an app. */
export class GetWebhook {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound (app or webhook), AppNotVisible */
  execute(actor: Actor, appId: string, uuid: string): Promise<Webhook> {
    return loadWebhook(this.deps, actor, appId, uuid);
  }
}

/** Deletes a webhook with its deliveries. */
export class DeleteWebhook {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids'>) {}

  /** @throws NotFound (app or webhook), AppNotVisible */
  async execute(actor: Actor, appId: string, uuid: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const webhook = await repos.webhooks.find(app.id, uuid.toLowerCase());
      if (!webhook) throw new NotFound('WEBHOOK.NOT_FOUND');
      await repos.webhooks.delete(app.id, webhook.uuid);
      await journal(repos, this.deps, actor, { action: 'app.webhook_delete', app, target: webhook.uuid, summary: `${actor.user.username} removed a webhook` });
    });
  }
}

/** The deliveries of one webhook, newest first. */
export class ListDeliveries {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound (app, webhook, or a page past the end), AppNotVisible */
  async execute(actor: Actor, appId: string, uuid: string, page: PageRequest): Promise<Page<WebhookDelivery>> {
    const webhook = await loadWebhook(this.deps, actor, appId, uuid);
    const result = await this.deps.uow.repositories.deliveries.listForWebhook(webhook.uuid, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** How long one attempt may hold its claim on a delivery: longer than the sender's timeout. */
const CLAIM_SECONDS = 60;

/**
 * Attempts every due delivery once, oldest first: a 2xx marks it delivered; anything else
 * schedules the next attempt with a doubling pause, until `webhookRetryHours` after the
 * event, when it is marked failed. Each delivery is claimed in one statement first, so
 * that several controller processes (or a restarted one) never deliver it together, and a
 * delivered one is never sent again.
 */
export class DeliverWebhooks {
  constructor(
    private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'secrets' | 'settings' | 'webhookSender' | 'webhookSigner' | 'deliveryObserver'>,
  ) {}

  /** How many deliveries were attempted. @throws Unavailable without a sender and a signer. */
  async execute(limit = 20): Promise<number> {
    const { uow, clock, webhookSender: sender, webhookSigner: signer } = this.deps;
    if (!sender || !signer) throw new Unavailable('WEBHOOK.NO_SENDER', 'This server cannot deliver webhooks.');
    const repos = uow.repositories;
    const due = await repos.deliveries.due(clock.now(), limit);
    let attempted = 0;
    for (const delivery of due) {
      const now = clock.now();
      if (!(await repos.deliveries.claim(delivery.uuid, now, new Date(now.getTime() + CLAIM_SECONDS * 1000)))) continue;
      const webhook = await repos.webhooks.findByUuid(delivery.webhook);
      if (!webhook) continue;
      attempted += 1;
      const secret = this.deps.secrets.open(webhook.sealedSecret);
      const attempt = await sender.send(
        webhook.url,
        {
          'Content-Type': 'application/json',
          'Svc-Webhook-Id': webhook.uuid,
          'Svc-Delivery-Id': delivery.uuid,
          'Svc-Event': delivery.action,
          'Svc-Webhook-Hmac-SHA256': signer.sign(secret, delivery.payload),
        },
        delivery.payload,
      );
      await repos.deliveries.record(this.outcome(delivery, attempt.status, attempt.error));
    }
    return attempted;
  }

  private outcome(delivery: WebhookDelivery, status: number | null, error: string): WebhookDelivery {
    const now = this.deps.clock.now();
    const attempts = delivery.attempts + 1;
    const base = { ...delivery, attempts, lastCode: status, lastAttempt: now };
    if (status !== null && status >= 200 && status < 300) {
      this.deps.deliveryObserver?.attempted('delivered');
      return { ...base, status: 'delivered', nextAttempt: null, lastError: '' };
    }
    const next = new Date(now.getTime() + deliveryRetryDelaySeconds(attempts, this.deps.settings.webhookRetryBaseSeconds) * 1000);
    const giveUpAt = delivery.created.getTime() + this.deps.settings.webhookRetryHours * 3_600_000;
    const reason = error || `the receiver answered ${status ?? 'nothing'}`;
    if (next.getTime() > giveUpAt) {
      this.deps.deliveryObserver?.attempted('failed');
      return { ...base, status: 'failed', nextAttempt: null, lastError: reason };
    }
    this.deps.deliveryObserver?.attempted('retrying');
    return { ...base, status: 'pending', nextAttempt: next, lastError: reason };
  }
}
