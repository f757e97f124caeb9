import type { AuditEvent, EventQuery, Webhook, WebhookDelivery } from '../model/events';
import type { Page, Slice } from '../model/pagination';
import type { DeliveryRepository, EventRepository, WebhookRepository } from '../ports/events';
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
    const rows = this.c.read().events.filter((e) => e.appUuid === appUuid);
    let start = 0;
    if (after !== null) {
      const index = rows.findIndex((e) => e.uuid === after);
      start = index >= 0 ? index + 1 : rows.length;
    }
    return rows.slice(start, start + limit).map(deepCopy);
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

/** Webhooks in memory, oldest first. */
export class MemoryWebhooks implements WebhookRepository {
  constructor(private readonly c: Context) {}

  async create(webhook: Webhook): Promise<void> {
    this.c.write().webhooks.set(webhook.uuid, webhook);
  }

  async find(app: string, uuid: string): Promise<Webhook | null> {
    const found = this.c.read().webhooks.get(uuid);
    return found && found.app === app ? deepCopy(found) : null;
  }

  async findByUuid(uuid: string): Promise<Webhook | null> {
    const found = this.c.read().webhooks.get(uuid);
    return found ? deepCopy(found) : null;
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Webhook>> {
    return page(this.c.read().webhooks.filter((w) => w.app === app), slice);
  }

  async allForApp(app: string): Promise<Webhook[]> {
    return this.c.read().webhooks.filter((w) => w.app === app).map(deepCopy);
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
}

interface Claimed extends WebhookDelivery {
  claimedUntil?: number;
}

/** Deliveries in memory. */
export class MemoryDeliveries implements DeliveryRepository {
  constructor(private readonly c: Context) {}

  async create(delivery: WebhookDelivery): Promise<void> {
    this.c.write().deliveries.set(delivery.uuid, delivery);
  }

  async listForWebhook(webhook: string, slice: Slice): Promise<Page<WebhookDelivery>> {
    const rows = this.c.read().deliveries.filter((d) => d.webhook === webhook).reverse();
    return page(rows.map(strip), slice);
  }

  async due(now: Date, limit: number): Promise<WebhookDelivery[]> {
    return (this.c.read().deliveries.values() as Claimed[])
      .filter((d) => isDue(d, now.getTime()))
      .slice(0, limit)
      .map((d) => strip(deepCopy(d)));
  }

  async claim(uuid: string, now: Date, until: Date): Promise<boolean> {
    const tables = this.c.write();
    const row = tables.deliveries.get(uuid) as Claimed | undefined;
    if (!row || !isDue(row, now.getTime())) return false;
    tables.deliveries.set(uuid, { ...row, claimedUntil: until.getTime() } as Claimed);
    return true;
  }

  async record(delivery: WebhookDelivery): Promise<void> {
    const tables = this.c.write();
    if (!tables.deliveries.has(delivery.uuid)) return;
    tables.deliveries.set(delivery.uuid, strip(delivery));
  }

  async prune(before: Date): Promise<number> {
    const tables = this.c.write();
    const old = tables.deliveries.filter((d) => d.status !== 'pending' && d.created.getTime() < before.getTime());
    for (const d of old) tables.deliveries.remove(d.uuid);
    return old.length;
  }
}

function isDue(d: Claimed, now: number): boolean {
  return d.status === 'pending' && d.nextAttempt !== null && d.nextAttempt.getTime() <= now && (d.claimedUntil === undefined || d.claimedUntil < now);
}

function strip(d: Claimed): WebhookDelivery {
  const { claimedUntil: _claimed, ...rest } = d;
  return rest;
}
