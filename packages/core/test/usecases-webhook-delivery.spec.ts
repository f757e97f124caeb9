import { createUseCases, healthAfter, HEALTHY_ENDPOINT, nextDeliveryTurn, type Actor, type DeliveryAttempt } from '@svc/core';
import { InMemoryUnitOfWork, describeWebhookTurnsContract } from '@svc/core/testing';
import { World } from './support/world';

const PAGE = { page: 1, pageSize: 100 };
const BACKOFF = { baseSeconds: 10, pauseAfterFailures: 3, pauseMinutes: 30 };

/** A sender whose answers the test gives, one receiver (URL) at a time; it records what is in flight. */
class HeldSender {
  readonly sent: Array<{ url: string; action: string; body: string }> = [];
  readonly open = new Map<string, number>();
  most = 0;
  /** Most attempts in flight to one URL at once. */
  mostPerUrl = 0;
  private readonly waiting: Array<{ url: string; answer: (attempt: DeliveryAttempt) => void }> = [];
  /** URLs that answer at once, with this status. */
  readonly quick = new Map<string, number>();

  async send(url: string, headers: Record<string, string>, body: string): Promise<DeliveryAttempt> {
    this.sent.push({ url, action: headers['Svc-Event'] ?? '', body });
    const quick = this.quick.get(url);
    if (quick !== undefined) return { status: quick, error: '' };
    this.open.set(url, (this.open.get(url) ?? 0) + 1);
    this.mostPerUrl = Math.max(this.mostPerUrl, this.open.get(url) ?? 0);
    this.most = Math.max(this.most, this.inFlight());
    return new Promise((resolve) => this.waiting.push({ url, answer: resolve }));
  }

  inFlight(): number {
    return [...this.open.values()].reduce((a, b) => a + b, 0);
  }

  /** Answers every held attempt (a timeout, say). */
  answerAll(attempt: DeliveryAttempt): void {
    for (const held of this.waiting.splice(0)) {
      this.open.set(held.url, (this.open.get(held.url) ?? 1) - 1);
      held.answer(attempt);
    }
  }
}

function deliveryWorld(settings: Record<string, number> = {}) {
  const world = new World({ webhookRetryHours: 24, webhookRetryBaseSeconds: 10, webhookConcurrency: 8, webhookConcurrencyPerOwner: 2, ...settings });
  const sender = new HeldSender();
  const useCases = createUseCases({ ...world.deps, webhookSender: sender, webhookSigner: { sign: () => 'sig' } });
  return { world, sender, useCases };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};

async function hooked(useCases: ReturnType<typeof deliveryWorld>['useCases'], actor: Actor, app: string, url: string): Promise<string> {
  return (await useCases.createWebhook.execute(actor, app, { url, events: ['config'] })).webhook.uuid;
}

describe('delivery turns', () => {
  it('give a free slot to the owner with the fewest attempts running, ties in turn after the last served', () => {
    const waiting = [
      { webhook: 'm1', owner: 'mallory' },
      { webhook: 'm2', owner: 'mallory' },
      { webhook: 'c1', owner: 'carol' },
      { webhook: 'b1', owner: 'bob' },
    ];
    expect(nextDeliveryTurn(waiting, new Map(), 2, null)).toBe(3);
    expect(nextDeliveryTurn(waiting, new Map([['bob', 1]]), 2, 'bob')).toBe(2);
    expect(nextDeliveryTurn(waiting, new Map([['bob', 1], ['carol', 1]]), 2, 'carol')).toBe(0);
    // Round robin among equals: after carol comes mallory, then bob again.
    expect(nextDeliveryTurn(waiting, new Map([['bob', 1], ['carol', 1], ['mallory', 1]]), 2, 'carol')).toBe(0);
    expect(nextDeliveryTurn(waiting, new Map([['bob', 1], ['carol', 1], ['mallory', 1]]), 2, 'mallory')).toBe(3);
  });

  it('never give an owner more than perOwner slots, however many of its webhooks wait', () => {
    const waiting = [1, 2, 3, 4, 5].map((i) => ({ webhook: `m${i}`, owner: 'mallory' }));
    expect(nextDeliveryTurn(waiting, new Map([['mallory', 1]]), 2, null)).toBe(0);
    expect(nextDeliveryTurn(waiting, new Map([['mallory', 2]]), 2, null)).toBeNull();
    expect(nextDeliveryTurn([], new Map(), 2, null)).toBeNull();
  });
});

describe("a receiver's health", () => {
  const now = new Date(Date.UTC(2026, 11, 7, 12));
  const at = (seconds: number): Date => new Date(now.getTime() + seconds * 1000);

  it('backs off by its own failures in a row, pauses past the threshold, and a 2xx resets it', () => {
    const once = healthAfter(HEALTHY_ENDPOINT, false, 'timeout', now, BACKOFF);
    expect(once).toEqual({ status: 'failing', failures: 1, lastError: 'timeout', resumesAt: at(10) });
    const twice = healthAfter(once, false, 'refused', now, BACKOFF);
    expect(twice).toEqual({ status: 'failing', failures: 2, lastError: 'refused', resumesAt: at(20) });
    const paused = healthAfter(twice, false, 'timeout', now, BACKOFF);
    expect(paused).toEqual({ status: 'paused', failures: 3, lastError: 'timeout', resumesAt: at(30 * 60) });
    // The attempt after a pause that fails pauses it again.
    expect(healthAfter(paused, false, 'timeout', now, BACKOFF)).toMatchObject({ status: 'paused', failures: 4, resumesAt: at(30 * 60) });
    expect(healthAfter(paused, true, '', now, BACKOFF)).toEqual(HEALTHY_ENDPOINT);
  });
});

describe('fair webhook delivery', () => {
  it("delivers another owner's event while ten of one owner's receivers hang, within the concurrency and per-owner caps", async () => {
    const { world, sender, useCases } = deliveryWorld();
    const mallory = await world.actor('mallory');
    const carol = await world.actor('carol');
    for (const i of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
      await world.app(mallory, `slow${i}`);
      await hooked(useCases, mallory, `slow${i}`, `https://slow${i}.example.com/`);
      await useCases.setConfig.execute(mallory, `slow${i}`, { values: { A: '1' } });
    }
    await world.app(carol, 'quick');
    await hooked(useCases, carol, 'quick', 'https://quick.example.com/');
    sender.quick.set('https://quick.example.com/', 204);

    // The hostile receivers are first in the queue and never answer.
    expect(await useCases.deliverWebhooks.fill()).toBe(2);
    await flush();
    expect(sender.inFlight()).toBe(2);
    await useCases.setConfig.execute(carol, 'quick', { values: { B: '1' } });
    expect(await useCases.deliverWebhooks.fill()).toBe(1);
    await flush();
    expect(sender.sent.filter((s) => s.url === 'https://quick.example.com/')).toHaveLength(1);
    expect(sender.inFlight()).toBe(2);
    // The rest of them fail at once from now on; each freed slot goes to the next of them.
    for (const i of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) sender.quick.set(`https://slow${i}.example.com/`, 504);
    sender.answerAll({ status: null, error: 'timed out' });
    await useCases.deliverWebhooks.settled();
    expect(sender.sent.filter((s) => s.url.startsWith('https://slow'))).toHaveLength(10);
    expect(sender.most).toBeLessThanOrEqual(2);
    expect(sender.mostPerUrl).toBe(1);
  });

  it('keeps one receiver to one attempt at a time and to event order: a later event waits while an earlier one is retried', async () => {
    const { world, sender, useCases } = deliveryWorld();
    const alice = await world.actor('alice');
    await world.app(alice);
    const url = 'https://hooks.example.com/in-order';
    const uuid = await hooked(useCases, alice, 'myapp', url);
    for (const key of ['K1', 'K2', 'K3']) await useCases.setConfig.execute(alice, 'myapp', { values: { [key]: '1' } });
    sender.quick.set(url, 500);
    expect(await useCases.deliverWebhooks.execute()).toBe(1);
    // Failing: the first event is retried after its back-off, the others not sent meanwhile.
    world.clock.advanceSeconds(5);
    expect(await useCases.deliverWebhooks.execute()).toBe(0);
    world.clock.advanceSeconds(6);
    expect(await useCases.deliverWebhooks.execute()).toBe(1);
    sender.quick.set(url, 204);
    world.clock.advanceSeconds(25);
    expect(await useCases.deliverWebhooks.execute()).toBe(3);
    const keys = sender.sent.map((s) => (JSON.parse(s.body) as { summary: string }).summary.split(' ').pop());
    expect(keys).toEqual(['K1', 'K1', 'K1', 'K2', 'K3']);
    expect(sender.mostPerUrl).toBeLessThanOrEqual(1);
    expect((await useCases.getWebhook.execute(alice, 'myapp', uuid)).health).toEqual(HEALTHY_ENDPOINT);
  });

  it("pauses a receiver that keeps failing, holding only its own deliveries, and shows why and until when", async () => {
    const { world, sender, useCases } = deliveryWorld({ webhookPauseAfterFailures: 3, webhookPauseMinutes: 30 });
    const alice = await world.actor('alice');
    const carol = await world.actor('carol');
    await world.app(alice, 'down');
    await world.app(carol, 'up');
    const down = await hooked(useCases, alice, 'down', 'https://down.example.com/');
    await hooked(useCases, carol, 'up', 'https://up.example.com/');
    sender.quick.set('https://down.example.com/', 503);
    sender.quick.set('https://up.example.com/', 200);
    await useCases.setConfig.execute(alice, 'down', { values: { A: '1' } });
    for (let i = 0; i < 3; i++) {
      await useCases.deliverWebhooks.execute();
      world.clock.advanceSeconds(3600);
    }
    const paused = (await useCases.getWebhook.execute(alice, 'down', down)).health;
    expect(paused).toMatchObject({ status: 'paused', failures: 3, lastError: 'the receiver answered 503' });
    // Three attempts, then none while paused, though its delivery is due again.
    const attemptsDown = (): number => sender.sent.filter((s) => s.url === 'https://down.example.com/').length;
    expect(attemptsDown()).toBe(3);
    const resumes = (paused.resumesAt as Date).getTime();
    world.clock.advance(resumes - world.clock.now().getTime() - 1000);
    await useCases.setConfig.execute(carol, 'up', { values: { B: '1' } });
    expect(await useCases.deliverWebhooks.execute()).toBe(1);
    expect(attemptsDown()).toBe(3);
    // When the pause ends one attempt is made; a 2xx makes it active again and the queue drains.
    world.clock.advanceSeconds(1);
    sender.quick.set('https://down.example.com/', 204);
    await useCases.setConfig.execute(alice, 'down', { values: { C: '1' } });
    expect(await useCases.deliverWebhooks.execute()).toBe(2);
    expect((await useCases.getWebhook.execute(alice, 'down', down)).health).toEqual(HEALTHY_ENDPOINT);
    expect((await useCases.listDeliveries.execute(alice, 'down', down, PAGE)).items.map((d) => d.status)).toEqual(['delivered', 'delivered']);
  });
});

describeWebhookTurnsContract('InMemoryUnitOfWork', async () => ({ uow: new InMemoryUnitOfWork() }));
