/// <reference types="jest" />
import type { Webhook, WebhookDelivery } from '../../model/events';
import type { UnitOfWork } from '../../ports/repositories';
import { HEALTHY_ENDPOINT } from '../../rules/webhook-health';

/** Opens an empty store (its schema made) before each test; `close` (when given) after it. */
export type OpenWebhookStore = () => Promise<{ uow: UnitOfWork; close?: () => Promise<void> }>;

const T0 = Date.UTC(2026, 11, 7, 12, 0, 0, 0);
let n = 0;
const uuid = (): string => `00000000-0000-4000-8034-${(++n).toString(16).padStart(12, '0')}`;

const hook = (owner: string, fields: Partial<Webhook> = {}): Webhook => ({
  uuid: uuid(), app: `${owner}-app`, owner, url: 'http://127.0.0.1:9/hook', events: ['config'], sealedSecret: 's', created: new Date(T0), health: HEALTHY_ENDPOINT, ...fields,
});

const delivery = (webhook: Webhook, at: number, fields: Partial<WebhookDelivery> = {}): WebhookDelivery => ({
  uuid: uuid(), webhook: webhook.uuid, app: webhook.app, event: uuid(), action: 'config.update', payload: '{}', status: 'pending',
  attempts: 0, nextAttempt: new Date(at), lastCode: null, lastAttempt: null, lastError: '', created: new Date(at), ...fields,
});

/**
 * The shared contract of the webhook delivery turns (`DeliveryRepository.dueHeads` and
 * `head`, `WebhookRepository.claim` and `release`): only each webhook's oldest pending
 * delivery is offered, a few per owner, none of a claimed or resting webhook, and a webhook
 * is claimed by one caller at a time.
 */
export function describeWebhookTurnsContract(label: string, open: OpenWebhookStore): void {
  describe(`${label}: webhook delivery turns contract`, () => {
    let uow: UnitOfWork;
    let close: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ uow, close } = await open());
    });

    afterEach(async () => {
      await close?.();
    });

    it("offers only each webhook's oldest pending delivery, at most perOwner per owner, none of a claimed or resting webhook", async () => {
      const repos = uow.repositories;
      const now = new Date(T0 + 60_000);
      const hostile = [0, 1, 2, 3].map(() => hook('mallory'));
      const quiet = hook('carol');
      const resting = hook('dave', { health: { status: 'paused', failures: 5, lastError: 'timeout', resumesAt: new Date(T0 + 3_600_000) } });
      for (const w of [...hostile, quiet, resting]) await repos.webhooks.create(w);
      const first = delivery(hostile[0] as Webhook, T0);
      // A later event of the same webhook, due too: it waits behind the first.
      const second = delivery(hostile[0] as Webhook, T0 + 1);
      const delivered = delivery(quiet, T0 - 5, { status: 'delivered', nextAttempt: null });
      const notYet = delivery(quiet, T0 + 2, { nextAttempt: new Date(T0 + 120_000) });
      await uow.transaction(async (tx) => {
        for (const d of [delivered, first, second, notYet]) await tx.deliveries.create(d);
        for (const w of hostile.slice(1)) await tx.deliveries.create(delivery(w, T0 + 3));
        await tx.deliveries.create(delivery(resting, T0 + 4));
      });
      const heads = await repos.deliveries.dueHeads(now, 2, 100);
      // mallory's two oldest webhooks; carol's head is not due yet; dave's receiver rests.
      expect(heads.map((h) => h.owner)).toEqual(['mallory', 'mallory']);
      expect(heads[0]?.delivery.uuid).toBe(first.uuid);
      expect(heads.some((h) => h.delivery.uuid === second.uuid)).toBe(false);
      expect((await repos.deliveries.head(quiet.uuid))?.uuid).toBe(notYet.uuid);

      // Once carol's head is due, she is offered beside mallory's capped two.
      const later = new Date(T0 + 121_000);
      expect((await repos.deliveries.dueHeads(later, 2, 100)).map((h) => h.owner).sort()).toEqual(['carol', 'mallory', 'mallory']);

      // A claimed webhook is offered to nobody, and claimed once.
      expect(await repos.webhooks.claim((hostile[0] as Webhook).uuid, later, new Date(later.getTime() + 70_000))).toBe(true);
      expect(await repos.webhooks.claim((hostile[0] as Webhook).uuid, later, new Date(later.getTime() + 70_000))).toBe(false);
      expect(await repos.webhooks.claim(resting.uuid, later, new Date(later.getTime() + 70_000))).toBe(false);
      const offered = (await repos.deliveries.dueHeads(later, 10, 100)).map((h) => h.delivery.webhook);
      expect(offered).not.toContain((hostile[0] as Webhook).uuid);
      expect(offered).toHaveLength(4);

      // Releasing records the health; a failing receiver rests until resumesAt.
      const failing = { status: 'failing' as const, failures: 1, lastError: 'the receiver answered 500', resumesAt: new Date(later.getTime() + 10_000) };
      await repos.webhooks.release((hostile[0] as Webhook).uuid, failing);
      expect((await repos.webhooks.findByUuid((hostile[0] as Webhook).uuid))?.health).toEqual(failing);
      expect((await repos.deliveries.dueHeads(later, 10, 100)).map((h) => h.delivery.webhook)).not.toContain((hostile[0] as Webhook).uuid);
      const rested = new Date(later.getTime() + 10_000);
      expect((await repos.deliveries.dueHeads(rested, 10, 100)).map((h) => h.delivery.uuid)).toContain(first.uuid);
      expect(await repos.webhooks.claim((hostile[0] as Webhook).uuid, rested, new Date(rested.getTime() + 70_000))).toBe(true);
      // Claims made at once: one caller gets the webhook.
      const raced = await Promise.all([0, 1, 2, 3].map(() => repos.webhooks.claim(quiet.uuid, rested, new Date(rested.getTime() + 70_000))));
      expect(raced.filter(Boolean)).toHaveLength(1);
      // The limit counts after the per-owner cap.
      expect(await repos.deliveries.dueHeads(rested, 10, 1)).toHaveLength(1);
    });
  });
}
