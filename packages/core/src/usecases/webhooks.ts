import { NotFound, QuotaExceeded } from '../errors';
import type { Webhook, WebhookDelivery } from '../model/events';
import { assertPageExists, sliceOf, type Page, type PageRequest } from '../model/pagination';
import { parseWebhookRequest } from '../rules/events';
import { HEALTHY_ENDPOINT } from '../rules/webhook-health';
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
        health: HEALTHY_ENDPOINT,
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
