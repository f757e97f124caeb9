import type { IdempotencyStore, JournalSignal, UseCases, WebhookSender, WebhookSigner } from '@svc/core';
import { HmacWebhookSigner } from '@svc/crypto-node';
import type { HttpLogger } from '@svc/http-express';
import type { EventSettings } from './config-events';
import { HttpWebhookSender } from './webhook-sender';

/** The ports of the audit journal, webhooks and idempotency keys, as the composition root passes them to the core. */
export interface EventPorts {
  idempotency: IdempotencyStore;
  journalSignal: JournalSignal;
  webhookSender: WebhookSender;
  webhookSigner: WebhookSigner;
}

/** How often the journal and the stored idempotent answers are pruned. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * The background work of events in a controller process: the delivery worker, which every
 * `pollMs` fills its free delivery slots with due webhook deliveries (deliveries are rows in
 * the database, so those queued before a restart, or by another process, are picked up; a
 * slot that frees is filled again at once, by the core), and the hourly pruning of the
 * journal and of idempotent answers past their retention. Attempts run beside the pruning
 * and beside each other: a slow receiver holds its own slot only.
 */
export function startEventWorkers(useCases: UseCases, pollMs: number, logger: HttpLogger): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const deliver = (): void => {
    if (stopped) return;
    useCases.deliverWebhooks.fill().catch((error: unknown) => logger.error({ err: error }, 'Webhook delivery failed'));
  };
  const prune = (): void => {
    running = running.then(async () => {
      if (stopped) return;
      try {
        await useCases.pruneJournal.execute();
      } catch (error) {
        logger.error({ err: error }, 'Pruning the event journal failed');
      }
    });
  };
  const deliveries = setInterval(deliver, pollMs);
  const pruning = setInterval(prune, PRUNE_EVERY_MS);
  deliveries.unref();
  pruning.unref();
  deliver();
  prune();
  return {
    async stop() {
      stopped = true;
      clearInterval(deliveries);
      clearInterval(pruning);
      await Promise.all([running, useCases.deliverWebhooks.stop()]);
    },
  };
}

/** The event ports over the database and the settings: shared by every process on the database. */
export function eventPorts(
  database: { createIdempotencyStore(): IdempotencyStore; createJournalSignal(): JournalSignal & { close(): void } },
  settings: EventSettings,
): EventPorts & { journalSignal: JournalSignal & { close(): void } } {
  return {
    idempotency: database.createIdempotencyStore(),
    journalSignal: database.createJournalSignal(),
    webhookSender: new HttpWebhookSender({ allowedHosts: settings.webhookAllowedHosts, timeoutMs: settings.webhookTimeoutMs }),
    webhookSigner: new HmacWebhookSigner(),
  };
}
