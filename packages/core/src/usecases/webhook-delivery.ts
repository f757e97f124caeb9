import { Unavailable } from '../errors';
import type { WebhookDelivery } from '../model/events';
import type { DeliveryAttempt, DueDelivery } from '../ports/events';
import { deliveryRetryDelaySeconds } from '../rules/events';
import { healthAfter } from '../rules/webhook-health';
import { nextDeliveryTurn } from '../rules/webhook-turns';
import type { CoreDependencies } from './context';

type Deps = Pick<CoreDependencies, 'uow' | 'clock' | 'secrets' | 'settings' | 'webhookSender' | 'webhookSigner' | 'deliveryObserver'>;

/** Due deliveries read per look, at most: each owner's are capped first (see `dueHeads`). */
const LOOK_AHEAD = 400;

/**
 * Delivers webhooks fairly: up to `webhookConcurrency` attempts at once in this process, of
 * which at most `webhookConcurrencyPerOwner` go to one owner's webhooks; each free slot goes
 * to the owner with the fewest attempts running, ties in turn (round robin), and within an
 * owner to the webhook whose next delivery is oldest. A webhook is claimed before its
 * attempt (one statement, shared by every controller process), so no two deliveries go to
 * one receiver at once, and only its oldest pending delivery is attempted, so they arrive in
 * journal order. A 2xx marks a delivery delivered; anything else schedules its next attempt
 * with a doubling pause until `webhookRetryHours` after the event, then marks it failed; the
 * receiver's own health (`healthAfter`) slows and then pauses it, holding only its own
 * deliveries. A slot that frees is filled again at once.
 */
export class DeliverWebhooks {
  /** Attempts running in this process, per owner. */
  private readonly running = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private lastOwner: string | null = null;
  private filling: Promise<unknown> = Promise.resolve();
  private attempted = 0;
  private stopped = false;
  /** Failures of attempts running on their own, reported by the next `fill`. */
  private readonly errors: unknown[] = [];

  constructor(private readonly deps: Deps) {}

  /**
   * Attempts every due delivery, taking turns, until none is due, and resolves once every
   * attempt has finished: how many were made. `limit`: due deliveries read per look.
   * @throws Unavailable without a sender and a signer.
   */
  async execute(limit = LOOK_AHEAD): Promise<number> {
    const before = this.attempted;
    await this.fill(limit);
    await this.settled();
    return this.attempted - before;
  }

  /**
   * Starts attempts in the free slots, without waiting for them: how many started. Looks are
   * one at a time, so that two never hand out the same slots.
   * @throws Unavailable without a sender and a signer; the failure of an attempt that ran on its own since the last call.
   */
  fill(limit = LOOK_AHEAD): Promise<number> {
    const { webhookSender, webhookSigner } = this.deps;
    if (!webhookSender || !webhookSigner) return Promise.reject(new Unavailable('WEBHOOK.NO_SENDER', 'This server cannot deliver webhooks.'));
    const look = this.filling.then(() => this.look(limit));
    this.filling = look.catch(() => undefined);
    if (this.errors.length > 0) return look.then(() => Promise.reject(this.errors.splice(0)[0]));
    return look;
  }

  /** Resolves once no attempt is running (those started meanwhile included). */
  async settled(): Promise<void> {
    // A finished attempt starts a look, and a look may start attempts: wait until neither is left.
    for (;;) {
      if (this.inFlight.size > 0) {
        await Promise.all([...this.inFlight]);
        continue;
      }
      const filling = this.filling;
      await filling;
      if (this.inFlight.size === 0 && filling === this.filling) break;
    }
    if (this.errors.length > 0) throw this.errors.splice(0)[0];
  }

  /** Starts no more attempts and waits for the running ones. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.settled().catch(() => undefined);
  }

  private async look(limit: number): Promise<number> {
    const { uow, clock, settings } = this.deps;
    let free = settings.webhookConcurrency - this.inFlight.size;
    if (this.stopped || free <= 0) return 0;
    const now = clock.now();
    const until = new Date(now.getTime() + settings.webhookClaimSeconds * 1000);
    const waiting = await uow.repositories.deliveries.dueHeads(now, settings.webhookConcurrencyPerOwner, limit);
    let started = 0;
    while (free > 0) {
      const turns = waiting.map((due) => ({ webhook: due.delivery.webhook, owner: due.owner }));
      const index = nextDeliveryTurn(turns, this.running, settings.webhookConcurrencyPerOwner, this.lastOwner);
      if (index === null) break;
      const [chosen] = waiting.splice(index, 1) as [DueDelivery];
      // Another process may hold it, or have attempted it since the look.
      if (!(await uow.repositories.webhooks.claim(chosen.delivery.webhook, now, until))) continue;
      this.lastOwner = chosen.owner;
      this.running.set(chosen.owner, (this.running.get(chosen.owner) ?? 0) + 1);
      free -= 1;
      started += 1;
      const attempt: Promise<void> = this.attempt(chosen.delivery.webhook)
        .catch((error: unknown) => {
          this.errors.push(error);
        })
        .finally(() => {
          this.inFlight.delete(attempt);
          const left = (this.running.get(chosen.owner) ?? 1) - 1;
          if (left > 0) this.running.set(chosen.owner, left);
          else this.running.delete(chosen.owner);
          // The freed slot is filled at once; a failure here waits for the next poll.
          if (!this.stopped) this.fill().catch((error: unknown) => this.errors.push(error));
        });
      this.inFlight.add(attempt);
    }
    return started;
  }

  /** One attempt of the claimed webhook's oldest pending delivery, then its claim released. */
  private async attempt(uuid: string): Promise<void> {
    const { uow, clock, settings } = this.deps;
    const repos = uow.repositories;
    const webhook = await repos.webhooks.findByUuid(uuid);
    if (!webhook) return;
    const delivery = await repos.deliveries.head(uuid);
    const now = clock.now();
    if (!delivery || delivery.nextAttempt === null || delivery.nextAttempt.getTime() > now.getTime()) {
      await repos.webhooks.release(uuid, webhook.health);
      return;
    }
    this.attempted += 1;
    const secret = this.deps.secrets.open(webhook.sealedSecret);
    const answer = await (this.deps.webhookSender as NonNullable<Deps['webhookSender']>).send(
      webhook.url,
      {
        'Content-Type': 'application/json',
        'Svc-Webhook-Id': webhook.uuid,
        'Svc-Delivery-Id': delivery.uuid,
        'Svc-Event': delivery.action,
        'Svc-Webhook-Hmac-SHA256': (this.deps.webhookSigner as NonNullable<Deps['webhookSigner']>).sign(secret, delivery.payload),
      },
      delivery.payload,
    );
    const outcome = this.outcome(delivery, answer);
    const health = healthAfter(webhook.health, outcome.status === 'delivered', outcome.lastError, outcome.lastAttempt ?? now, {
      baseSeconds: settings.webhookRetryBaseSeconds,
      pauseAfterFailures: settings.webhookPauseAfterFailures,
      pauseMinutes: settings.webhookPauseMinutes,
    });
    await uow.transaction(async (tx) => {
      await tx.deliveries.record(outcome);
      await tx.webhooks.release(uuid, health);
    });
  }

  private outcome(delivery: WebhookDelivery, answer: DeliveryAttempt): WebhookDelivery {
    const now = this.deps.clock.now();
    const attempts = delivery.attempts + 1;
    const { status } = answer;
    const base = { ...delivery, attempts, lastCode: status, lastAttempt: now };
    if (status !== null && status >= 200 && status < 300) {
      this.deps.deliveryObserver?.attempted('delivered');
      return { ...base, status: 'delivered', nextAttempt: null, lastError: '' };
    }
    const next = new Date(now.getTime() + deliveryRetryDelaySeconds(attempts, this.deps.settings.webhookRetryBaseSeconds) * 1000);
    const giveUpAt = delivery.created.getTime() + this.deps.settings.webhookRetryHours * 3_600_000;
    const reason = answer.error || `the receiver answered ${status ?? 'nothing'}`;
    if (next.getTime() > giveUpAt) {
      this.deps.deliveryObserver?.attempted('failed');
      return { ...base, status: 'failed', nextAttempt: null, lastError: reason };
    }
    this.deps.deliveryObserver?.attempted('retrying');
    return { ...base, status: 'pending', nextAttempt: next, lastError: reason };
  }
}
