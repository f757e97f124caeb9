import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEALTHY_ENDPOINT, type AuditEvent, type WebhookDelivery } from '@svc/core';
import { createDatabase, type Database } from '../src';
import { createScratchDatabase, TEST_DATABASE_URL, type ScratchDatabase } from './support/postgres';

const ALL = { offset: 0, limit: 100 };
const T0 = Date.UTC(2026, 10, 26, 10, 0, 0, 0);
let n = 0;
const uuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;

const APP_UUIDS: Record<string, string> = { web: uuid(), other: uuid() };

function event(fields: Partial<AuditEvent>): AuditEvent {
  const app = fields.app === undefined ? 'web' : fields.app;
  return {
    uuid: uuid(), created: new Date(T0), actor: 'alice', action: 'config.update', app, appUuid: app === null ? null : (APP_UUIDS[app] ?? null), target: 'v2',
    summary: 'alice added FOO', requestId: 'req-1', address: '10.0.0.1', ...fields,
  };
}

const waitFor = async (check: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

function describeJournal(name: string, open: () => Promise<{ db: Database; another: () => Promise<Database>; done: () => Promise<void> }>): void {
  describe(`event journal, webhooks and idempotency keys on ${name}`, () => {
    let db: Database;
    let another: () => Promise<Database>;
    let done: () => Promise<void>;

    beforeAll(async () => {
      ({ db, another, done } = await open());
      await db.migrate();
      const repos = db.uow.repositories;
      for (const username of ['alice', 'bob']) {
        await repos.users.create({
          username, email: `${username}@example.com`, firstName: '', lastName: '', passwordHash: 'x', isSuperuser: false,
          isStaff: false, isActive: true, lastLogin: null, dateJoined: new Date(T0),
        });
      }
      await repos.apps.create({ uuid: APP_UUIDS.web as string, id: 'web', owner: 'alice', structure: {}, created: new Date(T0), updated: new Date(T0) });
      await repos.apps.create({ uuid: APP_UUIDS.other as string, id: 'other', owner: 'bob', structure: {}, created: new Date(T0), updated: new Date(T0) });
    });
    afterAll(async () => done());

    it('appends in the transaction of the change: a rolled-back one leaves no event', async () => {
      await expect(
        db.uow.transaction(async (tx) => {
          await tx.events.append(event({ summary: 'rolled back' }));
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      const page = await db.uow.repositories.events.list({}, ALL);
      expect(page.items.map((e) => e.summary)).not.toContain('rolled back');
    });

    it('lists newest first with filters, and only what a user may see', async () => {
      const repos = db.uow.repositories;
      const first = event({ action: 'app.create', target: 'web', created: new Date(T0) });
      const second = event({ action: 'config.update', created: new Date(T0 + 1000) });
      const hidden = event({ app: 'other', actor: 'bob', action: 'scale.update', created: new Date(T0 + 2000) });
      const account = event({ app: null, action: 'key.create', target: 'laptop', created: new Date(T0 + 3000) });
      const elsewhere = event({ app: null, actor: 'bob', action: 'user.login', target: 'bob', created: new Date(T0 + 4000) });
      await db.uow.transaction(async (tx) => {
        for (const e of [first, second, hidden, account, elsewhere]) await tx.events.append(e);
      });
      const all = await repos.events.list({}, ALL);
      expect(all.items.slice(0, 5).map((e) => e.uuid)).toEqual([elsewhere, account, hidden, second, first].map((e) => e.uuid));
      expect(all.items[3]).toEqual(second);
      const mine = await repos.events.list({ visibleTo: 'alice' }, ALL);
      expect(mine.items.map((e) => e.uuid)).toEqual([account, second, first].map((e) => e.uuid));
      expect((await repos.events.list({ action: 'config' }, ALL)).items.map((e) => e.uuid)).toEqual([second.uuid]);
      expect((await repos.events.list({ action: 'app.create' }, ALL)).items.map((e) => e.uuid)).toEqual([first.uuid]);
      expect((await repos.events.list({ actor: 'bob' }, ALL)).count).toBe(2);
      expect((await repos.events.list({ since: new Date(T0 + 2500) }, ALL)).items.map((e) => e.uuid)).toEqual([elsewhere.uuid, account.uuid]);
      expect((await repos.events.list({ app: 'web' }, { offset: 1, limit: 1 })).items.map((e) => e.uuid)).toEqual([first.uuid]);

      expect(await repos.events.newest(APP_UUIDS.web as string)).toBe(second.uuid);
      expect((await repos.events.after(APP_UUIDS.web as string, null, 10)).map((e) => e.uuid)).toEqual([first.uuid, second.uuid]);
      expect((await repos.events.after(APP_UUIDS.web as string, first.uuid, 10)).map((e) => e.uuid)).toEqual([second.uuid]);
      expect(await repos.events.after(APP_UUIDS.web as string, second.uuid, 10)).toEqual([]);
      // An id the journal does not have: from the newest on.
      expect(await repos.events.after(APP_UUIDS.web as string, uuid(), 10)).toEqual([]);
      expect(await repos.events.prune(new Date(T0 + 500))).toBeGreaterThanOrEqual(1);
      expect((await repos.events.after(APP_UUIDS.web as string, null, 10)).map((e) => e.uuid)).toEqual([second.uuid]);
    });

    it('keeps webhooks and deliveries; a webhook with a due delivery is claimed by one caller only', async () => {
      const repos = db.uow.repositories;
      const hook = {
        uuid: uuid(), app: 'web', owner: 'alice', url: 'http://127.0.0.1:9/hook', events: ['config'], sealedSecret: 's', created: new Date(T0), health: HEALTHY_ENDPOINT,
      };
      await repos.webhooks.create(hook);
      expect(await repos.webhooks.find('web', hook.uuid)).toEqual(hook);
      expect(await repos.webhooks.find('other', hook.uuid)).toBeNull();
      expect(await repos.webhooks.allForApp('web')).toEqual([hook]);
      expect(await repos.webhooks.countForApp('web')).toBe(1);
      const delivery: WebhookDelivery = {
        uuid: uuid(), webhook: hook.uuid, app: 'web', event: uuid(), action: 'config.update', payload: '{"a":1}', status: 'pending',
        attempts: 0, nextAttempt: new Date(T0), lastCode: null, lastAttempt: null, lastError: '', created: new Date(T0),
      };
      await repos.deliveries.create(delivery);
      const now = new Date(T0 + 1000);
      expect((await repos.deliveries.dueHeads(now, 2, 10)).map((d) => [d.delivery.uuid, d.owner])).toEqual([[delivery.uuid, 'alice']]);
      const other = await another();
      await other.migrate();
      const claims = await Promise.all([
        repos.webhooks.claim(hook.uuid, now, new Date(T0 + 60_000)),
        other.uow.repositories.webhooks.claim(hook.uuid, now, new Date(T0 + 60_000)),
      ]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await repos.deliveries.dueHeads(now, 2, 10)).toEqual([]);
      const recorded = { ...delivery, status: 'delivered' as const, attempts: 1, nextAttempt: null, lastCode: 204, lastAttempt: now };
      await repos.deliveries.record(recorded);
      await repos.webhooks.release(hook.uuid, HEALTHY_ENDPOINT);
      expect((await repos.deliveries.listForWebhook(hook.uuid, ALL)).items).toEqual([recorded]);
      expect(await repos.deliveries.prune(new Date(T0))).toBe(0);
      expect(await repos.deliveries.prune(new Date(T0 + 1))).toBe(1);
      await repos.deliveries.create({ ...delivery, uuid: uuid() });
      // Pending deliveries are never pruned: they are still to be made.
      expect(await repos.deliveries.prune(new Date(T0 + 1))).toBe(0);
      await repos.webhooks.deleteForApp('web');
      expect(await repos.webhooks.findByUuid(hook.uuid)).toBeNull();
      expect((await repos.deliveries.listForWebhook(hook.uuid, ALL)).count).toBe(0);
    });

    it('begins an idempotency key once across processes, then keeps its answer', async () => {
      const other = await another();
      const stores = [db.createIdempotencyStore(), other.createIdempotencyStore()];
      const request = { username: 'alice', key: 'k-1', fingerprint: 'f', response: null, created: new Date(T0) };
      const results = await Promise.all(stores.map((s) => s.begin(request)));
      expect(results.filter((r) => r === null)).toHaveLength(1);
      const response = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' };
      await stores[0]!.finish('alice', 'k-1', response);
      expect(await stores[1]!.begin(request)).toEqual({ ...request, response });
      await stores[1]!.forget('alice', 'k-1');
      expect(await stores[0]!.begin(request)).toBeNull();
      expect(await stores[0]!.prune(new Date(T0 + 1))).toBe(1);
    });

    it('signals followers of appends made through another database handle', async () => {
      const other = await another();
      const signal = db.createJournalSignal({ pollIntervalMs: 100 });
      let heard = 0;
      const stop = signal.subscribe(() => (heard += 1));
      try {
        await new Promise((r) => setTimeout(r, 300));
        const before = heard;
        await other.uow.transaction((tx) => tx.events.append(event({ summary: 'from elsewhere' })));
        await waitFor(() => heard > before);
      } finally {
        stop();
        signal.close();
      }
    });

    // SQLite has no LISTEN/NOTIFY (its signal polls, tested above): this test exists for PostgreSQL only.
    if (name === 'PostgreSQL') it('hears of a commit at once through LISTEN/NOTIFY, without waiting for a poll', async () => {
      const other = await another();
      const signal = db.createJournalSignal({ pollIntervalMs: 60_000 });
      let heard = 0;
      const stop = signal.subscribe(() => (heard += 1));
      try {
        // The first notification says the LISTEN connection is up.
        await waitFor(() => heard > 0);
        const before = heard;
        const started = Date.now();
        await other.uow.transaction(async (tx) => {
          await tx.events.append(event({ summary: 'notified' }));
          // Nothing is heard before the transaction commits.
          await new Promise((r) => setTimeout(r, 300));
          expect(heard).toBe(before);
        });
        await waitFor(() => heard > before, 3000);
        expect(Date.now() - started).toBeLessThan(3000);
      } finally {
        stop();
        signal.close();
      }
    });
  });
}

describeJournal('SQLite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-events-'));
  const make = (): Promise<Database> => createDatabase({ dataDir: dir });
  const db = await make();
  // One process holds an SQLite database: the second handle is the same one.
  return {
    db,
    another: async () => db,
    done: async () => {
      for (const opened of [db]) await opened.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

if (TEST_DATABASE_URL === null && process.env.CI === 'true') {
  it('needs PostgreSQL in CI', () => {
    throw new Error('TEST_DATABASE_URL is required when CI=true');
  });
}

if (TEST_DATABASE_URL === null) process.stdout.write('The journal on PostgreSQL was not tested: set TEST_DATABASE_URL to run it.\n');

(TEST_DATABASE_URL === null ? describe.skip : describe)(TEST_DATABASE_URL === null ? 'PostgreSQL (skipped: TEST_DATABASE_URL is not set)' : 'PostgreSQL', () => {
  describeJournal('PostgreSQL', async () => {
    const scratch: ScratchDatabase = await createScratchDatabase(TEST_DATABASE_URL as string, 'svc_events');
    const dir = await mkdtemp(join(tmpdir(), 'svc-events-pg-'));
    const opened: Database[] = [];
    const make = async (): Promise<Database> => {
      const db = await createDatabase({ url: scratch.url, dataDir: dir });
      opened.push(db);
      return db;
    };
    return {
      db: await make(),
      another: make,
      done: async () => {
        for (const db of opened) await db.close();
        await scratch.drop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
});
