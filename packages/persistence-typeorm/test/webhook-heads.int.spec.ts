import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEALTHY_ENDPOINT, type Webhook, type WebhookDelivery } from '@svc/core';
import { createDatabase, type Database } from '../src';
import { createScratchDatabase, TEST_DATABASE_URL } from './support/postgres';

const T0 = Date.UTC(2026, 11, 7, 12, 0, 0, 0);
let n = 0;
const uuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;

const hook = (owner: string, fields: Partial<Webhook> = {}): Webhook => ({
  uuid: uuid(), app: `${owner}-app`, owner, url: 'http://127.0.0.1:9/hook', events: ['config'], sealedSecret: 's', created: new Date(T0), health: HEALTHY_ENDPOINT, ...fields,
});

const delivery = (webhook: Webhook, at: number, fields: Partial<WebhookDelivery> = {}): WebhookDelivery => ({
  uuid: uuid(), webhook: webhook.uuid, app: webhook.app, event: uuid(), action: 'config.update', payload: '{}', status: 'pending',
  attempts: 0, nextAttempt: new Date(at), lastCode: null, lastAttempt: null, lastError: '', created: new Date(at), ...fields,
});

function describeHeads(name: string, open: () => Promise<{ db: Database; done: () => Promise<void> }>): void {
  describe(`webhook delivery turns on ${name}`, () => {
    let db: Database;
    let done: () => Promise<void>;
    beforeAll(async () => {
      ({ db, done } = await open());
      await db.migrate();
    });
    afterAll(async () => done());

    it("offers only each webhook's oldest pending delivery, at most perOwner per owner, none of a claimed or resting webhook", async () => {
      const repos = db.uow.repositories;
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
      await db.uow.transaction(async (tx) => {
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
      // The limit counts after the per-owner cap.
      expect(await repos.deliveries.dueHeads(rested, 10, 1)).toHaveLength(1);
    });
  });
}

describeHeads('SQLite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-webhook-heads-'));
  const db = await createDatabase({ dataDir: dir });
  return { db, done: async () => { await db.close(); await rm(dir, { recursive: true, force: true }); } };
});

if (TEST_DATABASE_URL === null) {
  process.stdout.write('Webhook delivery turns on PostgreSQL were not tested: set TEST_DATABASE_URL to run them.\n');
  if (process.env.CI === 'true') it('needs PostgreSQL in CI', () => { throw new Error('TEST_DATABASE_URL is required when CI=true'); });
} else {
  const serverUrl = TEST_DATABASE_URL;
  describeHeads('PostgreSQL', async () => {
    const scratch = await createScratchDatabase(serverUrl, 'svc_webhook_heads');
    const dir = await mkdtemp(join(tmpdir(), 'svc-webhook-heads-pg-'));
    const db = await createDatabase({ url: scratch.url, dataDir: dir });
    return { db, done: async () => { await db.close(); await scratch.drop(); await rm(dir, { recursive: true, force: true }); } };
  });
}
