import type { AuditEvent, EndpointHealth, EventQuery, Webhook, WebhookDelivery } from '../model/events';
import type { Page, Slice } from '../model/pagination';
import type { DeliveryRepository, DueDelivery, EventRepository, WebhookRepository } from '../ports/events';
import { actionMatches } from '../rules/events';
import { deepCopy } from './copy';
import { page, type Context } from './memory-context';
import type { Tables } from './memory-store';


/** The uuids of the apps `username` may see: owned or shared. */
function visibleApps(tables: Tables, username: string): Set<string> {
  const shared = new Set(tables.permissions.filter((p) => p.username === username).map((p) => p.app));
  return new Set(tables.apps.filter((a) => a.owner === username || shared.has(a.id)).map((a) => a.uuid));
}

/** The journal in memory, in insertion order. */
export class MemoryEvents implements EventRepository {
  constructor(private readonly c: Context) {}

  async append(event: AuditEvent): Promise<void> {
    this.c.write().events.set(event.uuid, event);
  }

  async list(query: EventQuery, slice: Slice): Promise<Page<AuditEvent>> {
    const tables = this.c.read();
    const visible = query.visibleTo ? visibleApps(tables, query.visibleTo) : null;
    const user = query.visibleTo;
    const rows = tables.events
      .filter((e) =>
        (query.app === undefined || e.app === query.app) &&
        (query.appUuid === undefined || e.appUuid === query.appUuid) &&
        (query.actor === undefined || e.actor === query.actor) &&
        (query.action === undefined || actionMatches(query.action, e.action)) &&
        (query.since === undefined || e.created.getTime() >= query.since.getTime()) &&
        (visible === null || (e.app !== null ? e.appUuid !== null && visible.has(e.appUuid) : e.actor === user || e.target === user)),
      )
      .reverse();
    return page(rows, slice);
  }

  async after(appUuid: string, after: string | null, limit: number): Promise<AuditEvent[]> {
    // Positions in the whole journal, as "seq" is: `after` may be an event of another app.
    const all = this.c.read().events.values();
    const own = (e: AuditEvent): boolean => e.appUuid === appUuid;
    let start = 0;
    if (after !== null) {
      const index = all.findIndex((e) => e.uuid === after);
      start = index >= 0 ? index + 1 : all.reduce((last, e, i) => (own(e) ? i + 1 : last), 0);
    }
    return all.slice(start).filter(own).slice(0, limit).map(deepCopy);
  }

  async newest(appUuid: string): Promise<string | null> {
    const rows = this.c.read().events.filter((e) => e.appUuid === appUuid);
    return rows.length === 0 ? null : (rows[rows.length - 1] as AuditEvent).uuid;
  }

  async prune(before: Date): Promise<number> {
    const tables = this.c.write();
    const old = tables.events.filter((e) => e.created.getTime() < before.getTime());
    for (const e of old) tables.events.remove(e.uuid);
    return old.length;
  }
}

interface ClaimedHook extends Webhook {
  claimedUntil?: number;
}

/** Whether the webhook may be claimed at `now`: no live claim, and its health lets it be attempted. */
function isFree(w: ClaimedHook, now: number): boolean {
  return (w.claimedUntil === undefined || w.claimedUntil < now) && (w.health.resumesAt === null || w.health.resumesAt.getTime() <= now);
}

function stripHook(w: ClaimedHook): Webhook {
  const { claimedUntil: _claimed, ...rest } = w;
  return rest;
}

/** Webhooks in memory, oldest first. */
export class MemoryWebhooks implements WebhookRepository {
  constructor(private readonly c: Context) {}

  async create(webhook: Webhook): Promise<void> {
    this.c.write().webhooks.set(webhook.uuid, webhook);
  }

  async find(app: string, uuid: string): Promise<Webhook | null> {
    const found = this.c.read().webhooks.get(uuid);
    return found && found.app === app ? stripHook(deepCopy(found)) : null;
  }

  async findByUuid(uuid: string): Promise<Webhook | null> {
    const found = this.c.read().webhooks.get(uuid);
    return found ? stripHook(deepCopy(found)) : null;
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Webhook>> {
    const result = page(this.c.read().webhooks.filter((w) => w.app === app), slice);
    return { count: result.count, items: result.items.map(stripHook) };
  }

  async allForApp(app: string): Promise<Webhook[]> {
    return this.c.read().webhooks.filter((w) => w.app === app).map((w) => stripHook(deepCopy(w)));
  }

  async countForApp(app: string): Promise<number> {
    return this.c.read().webhooks.filter((w) => w.app === app).length;
  }

  async delete(app: string, uuid: string): Promise<void> {
    const tables = this.c.write();
    if (tables.webhooks.get(uuid)?.app !== app) return;
    tables.webhooks.remove(uuid);
    tables.deliveries.removeWhere((d) => d.webhook === uuid);
  }

  async deleteForApp(app: string): Promise<void> {
    const tables = this.c.write();
    tables.webhooks.removeWhere((w) => w.app === app);
    tables.deliveries.removeWhere((d) => d.app === app);
  }

  async claim(uuid: string, now: Date, until: Date): Promise<boolean> {
    const tables = this.c.write();
    const row = tables.webhooks.get(uuid) as ClaimedHook | undefined;
    if (!row || !isFree(row, now.getTime())) return false;
    tables.webhooks.set(uuid, { ...row, claimedUntil: until.getTime() } as ClaimedHook);
    return true;
  }

  async release(uuid: string, health: EndpointHealth): Promise<void> {
    const tables = this.c.write();
    const row = tables.webhooks.get(uuid);
    if (row) tables.webhooks.set(uuid, { ...stripHook(row), health });
  }
}

/** Deliveries in memory. */
export class MemoryDeliveries implements DeliveryRepository {
  constructor(private readonly c: Context) {}

  async create(delivery: WebhookDelivery): Promise<void> {
    this.c.write().deliveries.set(delivery.uuid, delivery);
  }

  async listForWebhook(webhook: string, slice: Slice): Promise<Page<WebhookDelivery>> {
    const rows = this.c.read().deliveries.filter((d) => d.webhook === webhook).reverse();
    return page(rows, slice);
  }

  async dueHeads(now: Date, perOwner: number, limit: number): Promise<DueDelivery[]> {
    const tables = this.c.read();
    const at = now.getTime();
    const heads = new Map<string, WebhookDelivery>();
    for (const d of tables.deliveries.values()) {
      if (d.status === 'pending' && !heads.has(d.webhook)) heads.set(d.webhook, d);
    }
    const taken = new Map<string, number>();
    const due: DueDelivery[] = [];
    for (const head of heads.values()) {
      const hook = tables.webhooks.get(head.webhook) as ClaimedHook | undefined;
      if (!hook || !isFree(hook, at) || head.nextAttempt === null || head.nextAttempt.getTime() > at) continue;
      const n = taken.get(hook.owner) ?? 0;
      if (n >= perOwner) continue;
      taken.set(hook.owner, n + 1);
      due.push({ delivery: deepCopy(head), owner: hook.owner });
    }
    return due.slice(0, limit);
  }

  async head(webhook: string): Promise<WebhookDelivery | null> {
    const found = this.c.read().deliveries.values().find((d) => d.webhook === webhook && d.status === 'pending');
    return found ? deepCopy(found) : null;
  }

  async record(delivery: WebhookDelivery): Promise<void> {
    const tables = this.c.write();
    if (!tables.deliveries.has(delivery.uuid)) return;
    tables.deliveries.set(delivery.uuid, delivery);
  }

  async prune(before: Date): Promise<number> {
    const tables = this.c.write();
    const old = tables.deliveries.filter((d) => d.status !== 'pending' && d.created.getTime() < before.getTime());
    for (const d of old) tables.deliveries.remove(d.uuid);
    return old.length;
  }
}
