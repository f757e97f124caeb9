import {
  appEtag,
  createUseCases,
  etagListMatches,
  parseEventQuery,
  parseWebhookRequest,
  deliveryRetryDelaySeconds,
  type DeliveryAttempt,
  type IdempotencyStore,
  type IdempotentRequest,
  type StoredResponse,
} from '@svc/core';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

/** A sender that answers what the test says and records what it was asked to send. */
class ScriptedSender {
  readonly sent: Array<{ url: string; headers: Record<string, string>; body: string }> = [];
  answer: DeliveryAttempt = { status: 204, error: '' };

  async send(url: string, headers: Record<string, string>, body: string): Promise<DeliveryAttempt> {
    this.sent.push({ url, headers, body });
    return this.answer;
  }
}

/** An idempotency store in a map, for the use cases' rules. */
class MapIdempotencyStore implements IdempotencyStore {
  readonly rows = new Map<string, IdempotentRequest>();

  async begin(request: IdempotentRequest): Promise<IdempotentRequest | null> {
    const key = `${request.username}\u0000${request.key}`;
    const existing = this.rows.get(key);
    if (existing) return { ...existing };
    this.rows.set(key, { ...request });
    return null;
  }

  async finish(username: string, key: string, response: StoredResponse): Promise<void> {
    const row = this.rows.get(`${username}\u0000${key}`);
    if (row) row.response = response;
  }

  async forget(username: string, key: string): Promise<void> {
    this.rows.delete(`${username}\u0000${key}`);
  }

  async prune(before: Date): Promise<number> {
    let n = 0;
    for (const [key, row] of this.rows) if (row.created < before && this.rows.delete(key)) n += 1;
    return n;
  }
}

function eventWorld() {
  const world = new World({ webhookRetryHours: 1, webhookRetryBaseSeconds: 60 });
  const sender = new ScriptedSender();
  const idempotency = new MapIdempotencyStore();
  const useCases = createUseCases({
    ...world.deps,
    webhookSender: sender,
    webhookSigner: { sign: (secret, body) => `sig(${secret},${body.length})` },
    idempotency,
  });
  return { world, sender, idempotency, useCases };
}

describe('the audit journal', () => {
  it('appends each change with its request, never config values, in the transaction of the change', async () => {
    const { world, useCases } = eventWorld();
    const alice = { ...(await world.actor('alice')), request: { id: 'req-7', address: '203.0.113.9' } };
    await world.app(alice);
    await useCases.setConfig.execute(alice, 'myapp', { values: { PASSWORD: 'hunter2' } });
    const events = world.uow.snapshot().events;
    expect(events.map((e) => e.action)).toEqual(['app.create', 'config.update', 'release.create']);
    expect(events[1]).toMatchObject({ actor: 'alice', app: 'myapp', target: 'v2', requestId: 'req-7', address: '203.0.113.9' });
    expect(JSON.stringify(events)).not.toContain('hunter2');

    // A change that fails leaves no event.
    world.uow.failNextWrites(1);
    await expect(useCases.addDomain.execute(alice, 'myapp', { domain: 'shop.example.com' })).rejects.toThrow();
    expect(world.uow.snapshot().events).toHaveLength(3);
  });

  it('shows users the events of apps they see and of their account; administrators all', async () => {
    const { world, useCases } = eventWorld();
    const root = await world.actor('root', { admin: true });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice, 'a1');
    await world.app(bob, 'b1');
    const mine = await useCases.listEvents.execute(alice, {}, PAGE);
    expect(mine.items.every((e) => e.app === 'a1' || e.actor === 'alice')).toBe(true);
    expect(mine.items.some((e) => e.app === 'b1')).toBe(false);
    const all = await useCases.listEvents.execute(root, {}, PAGE);
    expect(all.items.some((e) => e.app === 'b1')).toBe(true);
    await useCases.grantPermission.execute(bob, 'b1', { username: 'alice' });
    expect((await useCases.listEvents.execute(alice, { app: 'b1' }, PAGE)).items.map((e) => e.action)).toContain('app.create');
    expect((await rejectionOf(useCases.listEvents.execute(alice, { since: 'soon' }, PAGE))).code).toBe('REQUEST.INVALID');
  });

  it('follows an app from a Last-Event-ID, each event once, in order', async () => {
    const { world } = eventWorld();
    let signal: () => void = () => undefined;
    const useCases = createUseCases({ ...world.deps, journalSignal: { subscribe: (l) => ((signal = l), () => undefined) } });
    const alice = await world.actor('alice');
    await world.app(alice);
    const first = world.uow.snapshot().events[0]!;
    await useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } });
    const got: string[] = [];
    const followed = await useCases.followEvents.execute(alice, 'myapp', first.uuid, (events) => got.push(...events.map((e) => e.action)));
    await new Promise((r) => setImmediate(r));
    await useCases.setConfig.execute(alice, 'myapp', { values: { B: '1' } });
    signal();
    signal();
    await new Promise((r) => setTimeout(r, 10));
    followed.unsubscribe();
    expect(got).toEqual(['config.update', 'release.create', 'config.update', 'release.create']);
  });
});

describe('event followers', () => {
  it('have the limits of log followers: per user and per process, given back on unsubscribe', async () => {
    const world = new World({ logFollowersPerUser: 1, logFollowersTotal: 2 });
    const useCases = createUseCases({ ...world.deps, journalSignal: { subscribe: () => () => undefined } });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    const carol = await world.actor('carol');
    await world.app(alice, 'a');
    await world.app(bob, 'b');
    await world.app(carol, 'c');
    const first = await useCases.followEvents.execute(alice, 'a', null, () => undefined);
    expect((await rejectionOf(useCases.followEvents.execute(alice, 'a', null, () => undefined))).code).toBe('EVENTS.TOO_MANY_FOLLOWERS');
    await useCases.followEvents.execute(bob, 'b', null, () => undefined);
    expect((await rejectionOf(useCases.followEvents.execute(carol, 'c', null, () => undefined))).kind).toBe('unavailable');
    first.unsubscribe();
    first.unsubscribe();
    await expect(useCases.followEvents.execute(carol, 'c', null, () => undefined)).resolves.toBeDefined();
    expect((await rejectionOf(useCases.followEvents.execute(bob, 'a', null, () => undefined))).kind).toBe('hidden');
  });
});

describe('webhooks', () => {
  it('queues signed deliveries of subscribed resources with the change, and retries until the receiver answers 2xx', async () => {
    const { world, sender, useCases } = eventWorld();
    const alice = await world.actor('alice');
    await world.app(alice);
    const { webhook, secret } = await useCases.createWebhook.execute(alice, 'myapp', { url: 'https://hooks.example.com/x', events: ['config'] });
    expect(secret).toMatch(/^whsec_/);
    expect(webhook.sealedSecret).not.toContain(secret);
    await useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } });
    expect(world.uow.snapshot().deliveries.map((d) => d.action)).toEqual(['config.update']);

    sender.answer = { status: 500, error: '' };
    expect(await useCases.deliverWebhooks.execute()).toBe(1);
    expect(sender.sent[0]?.headers).toMatchObject({ 'Svc-Event': 'config.update', 'Svc-Webhook-Id': webhook.uuid, 'Svc-Webhook-Hmac-SHA256': `sig(${secret},${sender.sent[0]!.body.length})` });
    // Not due again before its pause.
    expect(await useCases.deliverWebhooks.execute()).toBe(0);
    world.clock.advanceSeconds(61);
    sender.answer = { status: 200, error: '' };
    expect(await useCases.deliverWebhooks.execute()).toBe(1);
    const [delivery] = (await useCases.listDeliveries.execute(alice, 'myapp', webhook.uuid, PAGE)).items;
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2, lastCode: 200 });
    world.clock.advanceSeconds(3600);
    expect(await useCases.deliverWebhooks.execute()).toBe(0);
  });

  it('gives a delivery up once WEBHOOK_RETRY_HOURS have passed', async () => {
    const { world, sender, useCases } = eventWorld();
    const alice = await world.actor('alice');
    await world.app(alice);
    const { webhook } = await useCases.createWebhook.execute(alice, 'myapp', { url: 'https://hooks.example.com/x', events: ['scale', 'config'] });
    await useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } });
    sender.answer = { status: null, error: 'refused' };
    for (let i = 0; i < 10; i++) {
      await useCases.deliverWebhooks.execute();
      world.clock.advanceSeconds(3600);
    }
    const [delivery] = (await useCases.listDeliveries.execute(alice, 'myapp', webhook.uuid, PAGE)).items;
    expect(delivery).toMatchObject({ status: 'failed', lastError: 'refused', nextAttempt: null });
    world.clock.advanceSeconds(world.settings.eventRetentionDays * 86_400);
    expect(await useCases.pruneJournal.execute()).toEqual({ events: 4, deliveries: 1, idempotent: 0 });
    expect(world.uow.snapshot().deliveries).toEqual([]);
  });
});

describe('idempotency keys', () => {
  it('runs the first, replays a finished one, refuses another request or a running one', async () => {
    const { world, useCases } = eventWorld();
    expect(await useCases.startIdempotentRequest.execute('alice', 'k', 'f1')).toEqual({ kind: 'first' });
    expect((await rejectionOf(useCases.startIdempotentRequest.execute('alice', 'k', 'f1'))).code).toBe('IDEMPOTENCY.IN_PROGRESS');
    await useCases.finishIdempotentRequest.execute('alice', 'k', { status: 201, headers: {}, body: '{}' });
    expect(await useCases.startIdempotentRequest.execute('alice', 'k', 'f1')).toEqual({ kind: 'replay', response: { status: 201, headers: {}, body: '{}' } });
    expect((await rejectionOf(useCases.startIdempotentRequest.execute('alice', 'k', 'f2'))).code).toBe('IDEMPOTENCY.KEY_REUSED');
    expect(await useCases.startIdempotentRequest.execute('bob', 'k', 'f2')).toEqual({ kind: 'first' });
    await useCases.finishIdempotentRequest.execute('bob', 'k', { status: 503, headers: {}, body: '' });
    expect(await useCases.startIdempotentRequest.execute('bob', 'k', 'f2')).toEqual({ kind: 'first' });
    expect((await rejectionOf(useCases.startIdempotentRequest.execute('bob', 'x'.repeat(256), 'f'))).code).toBe('REQUEST.INVALID');
    // A first request whose process died is given up once no request could still be running.
    expect(await useCases.startIdempotentRequest.execute('carol', 'k', 'f')).toEqual({ kind: 'first' });
    world.clock.advanceSeconds(world.settings.runTimeoutSeconds + 299);
    expect((await rejectionOf(useCases.startIdempotentRequest.execute('carol', 'k', 'f'))).code).toBe('IDEMPOTENCY.IN_PROGRESS');
    world.clock.advanceSeconds(1);
    expect(await useCases.startIdempotentRequest.execute('carol', 'k', 'f')).toEqual({ kind: 'first' });
  });
});

describe('conditional writes', () => {
  it('refuses a config change or a scale whose If-Match is stale, changing nothing', async () => {
    const { world, useCases } = eventWorld();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const { config } = await useCases.getConfig.execute(alice, 'myapp');
    const stale = `"config-${config.uuid}"`;
    await useCases.setConfig.execute({ ...alice, request: { id: 'r', address: '', ifMatch: stale } }, 'myapp', { values: { A: '1' } });
    const refused = await rejectionOf(useCases.setConfig.execute({ ...alice, request: { id: 'r', address: '', ifMatch: stale } }, 'myapp', { values: { B: '1' } }));
    expect(refused.kind).toBe('precondition_failed');
    const app = await useCases.getApp.execute(alice, 'myapp');
    await useCases.scaleApp.execute({ ...alice, request: { id: 'r', address: '', ifMatch: appEtag(app) } }, 'myapp', { web: 2 });
    const again = await rejectionOf(useCases.scaleApp.execute({ ...alice, request: { id: 'r', address: '', ifMatch: appEtag(app) } }, 'myapp', { web: 3 }));
    expect(again.kind).toBe('precondition_failed');
    expect((await useCases.getApp.execute(alice, 'myapp')).structure.web).toBe(2);
  });
});

describe('event rules', () => {
  it('parse filters, webhook requests and back-off; match entity tags', () => {
    expect(parseEventQuery({ app: 'a', action: 'config', since: '2026-11-26' })).toEqual({ app: 'a', action: 'config', since: new Date('2026-11-26') });
    expect(() => parseEventQuery({ action: 'DROP TABLE' })).toThrow();
    expect(parseWebhookRequest({ url: 'https://x.example/h', events: ['config', 'config', 'scale'] })).toEqual({ url: 'https://x.example/h', events: ['config', 'scale'] });
    expect(() => parseWebhookRequest({ url: 'https://u:p@x.example/', events: ['config'] })).toThrow();
    expect(() => parseWebhookRequest({ url: 'https://x.example/', events: [] })).toThrow();
    expect(() => parseWebhookRequest({ url: 'https://x.example/', events: ['config'], secret: 'short' })).toThrow();
    expect([1, 2, 3, 20].map((n) => deliveryRetryDelaySeconds(n, 10))).toEqual([10, 20, 40, 3600]);
    expect(etagListMatches('W/"a", "b"', '"a"')).toBe(true);
    expect(etagListMatches('*', '"a"')).toBe(true);
    expect(etagListMatches('"b"', '"a"')).toBe(false);
  });
});
