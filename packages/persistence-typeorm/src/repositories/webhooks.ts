import type { DeliveryRepository, DeliveryStatus, Page, Slice, Webhook, WebhookDelivery, WebhookRepository } from '@svc/core';
import type { RawRow } from '../rows';
import { countOf } from '../rows';
import type { Session } from '../session';
import {
  ManagerRunner,
  readInstant,
  readInteger,
  readJson,
  readOptionalInstant,
  statement,
  writeInstant,
  writeJson,
  writeOptionalInstant,
  type Statement,
} from '../sql';

const HOOK_COLUMNS = '"uuid", "app", "owner", "url", "events", "sealed_secret", "created"';
const CREATE_HOOK = statement(`INSERT INTO "webhooks" (${HOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
const FIND_HOOK = statement(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "uuid" = ?`, `SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "uuid" = ?`);
const HOOKS_OF_APP = statement(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "app" = ? ORDER BY "created", "uuid"`);
const PAGE_OF_HOOKS = statement(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "app" = ? ORDER BY "created", "uuid" LIMIT ? OFFSET ?`);
const COUNT_HOOKS = statement('SELECT COUNT(*) AS "n" FROM "webhooks" WHERE "app" = ?');
const DELETE_HOOK = statement('DELETE FROM "webhooks" WHERE "app" = ? AND "uuid" = ?', 'DELETE FROM "webhooks" WHERE "app" = ? AND "uuid" = ?');
const DELETE_HOOK_DELIVERIES = statement('DELETE FROM "webhook_deliveries" WHERE "webhook" = ?', 'DELETE FROM "webhook_deliveries" WHERE "webhook" = ?');
const DELETE_APP_HOOKS = statement('DELETE FROM "webhooks" WHERE "app" = ?');
const DELETE_APP_DELIVERIES = statement('DELETE FROM "webhook_deliveries" WHERE "app" = ?');

function webhookOf(raw: RawRow): Webhook {
  return {
    uuid: String(raw.uuid),
    app: raw.app as string,
    owner: raw.owner as string,
    url: raw.url as string,
    events: readJson<string[]>(raw.events),
    sealedSecret: raw.sealed_secret as string,
    created: readInstant(raw.created),
  };
}

/** Runs a writing statement in the session. */
async function write(session: Session, sql: Statement, params: readonly unknown[]): Promise<RawRow[]> {
  return session.write((manager) => new ManagerRunner(session.dialect, manager).rows<RawRow>(sql, params));
}

/** WebhookRepository on TypeORM: table `webhooks`. */
export class TypeOrmWebhookRepository implements WebhookRepository {
  constructor(private readonly session: Session) {}

  async create(webhook: Webhook): Promise<void> {
    await write(this.session, CREATE_HOOK, [
      webhook.uuid, webhook.app, webhook.owner, webhook.url, writeJson(webhook.events), webhook.sealedSecret,
      writeInstant(this.session.dialect, webhook.created),
    ]);
  }

  async find(app: string, uuid: string): Promise<Webhook | null> {
    const found = await this.findByUuid(uuid);
    return found !== null && found.app === app ? found : null;
  }

  async findByUuid(uuid: string): Promise<Webhook | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_HOOK, [uuid]);
    return raw === undefined ? null : webhookOf(raw);
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Webhook>> {
    const count = countOf(await this.session.rows<RawRow>(COUNT_HOOKS, [app]));
    const rows = await this.session.rows<RawRow>(PAGE_OF_HOOKS, [app, slice.limit, slice.offset]);
    return { count, items: rows.map(webhookOf) };
  }

  async allForApp(app: string): Promise<Webhook[]> {
    return (await this.session.rows<RawRow>(HOOKS_OF_APP, [app])).map(webhookOf);
  }

  async countForApp(app: string): Promise<number> {
    return countOf(await this.session.rows<RawRow>(COUNT_HOOKS, [app]));
  }

  async delete(app: string, uuid: string): Promise<void> {
    const { dialect } = this.session;
    await this.session.write(async (manager) => {
      const sql = new ManagerRunner(dialect, manager);
      await sql.run(DELETE_HOOK, [app, uuid]);
      await sql.run(DELETE_HOOK_DELIVERIES, [uuid]);
    });
  }

  async deleteForApp(app: string): Promise<void> {
    const { dialect } = this.session;
    await this.session.write(async (manager) => {
      const sql = new ManagerRunner(dialect, manager);
      await sql.run(DELETE_APP_HOOKS, [app]);
      await sql.run(DELETE_APP_DELIVERIES, [app]);
    });
  }
}

const DELIVERY_COLUMNS =
  '"uuid", "webhook", "app", "event", "action", "payload", "status", "attempts", "next_attempt", "last_code", "last_attempt", "last_error", "created"';
const CREATE_DELIVERY = statement(`INSERT INTO "webhook_deliveries" (${DELIVERY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
const PAGE_OF_DELIVERIES = statement(
  `SELECT ${DELIVERY_COLUMNS} FROM "webhook_deliveries" WHERE "webhook" = ? ORDER BY "seq" DESC LIMIT ? OFFSET ?`,
  `SELECT ${DELIVERY_COLUMNS} FROM "webhook_deliveries" WHERE "webhook" = ? ORDER BY "seq" DESC LIMIT ? OFFSET ?`,
);
const COUNT_DELIVERIES = statement(
  'SELECT COUNT(*) AS "n" FROM "webhook_deliveries" WHERE "webhook" = ?',
  'SELECT COUNT(*) AS "n" FROM "webhook_deliveries" WHERE "webhook" = ?',
);
const DUE = statement(
  `SELECT ${DELIVERY_COLUMNS} FROM "webhook_deliveries" WHERE "status" = 'pending' AND "next_attempt" <= ? ` +
    'AND ("claimed_until" IS NULL OR "claimed_until" < ?) ORDER BY "seq" LIMIT ?',
);
// One statement: of two processes that read the same due delivery, one gets it.
const CLAIM = statement(
  `UPDATE "webhook_deliveries" SET "claimed_until" = ? WHERE "uuid" = ? AND "status" = 'pending' AND "next_attempt" <= ? ` +
    'AND ("claimed_until" IS NULL OR "claimed_until" < ?) RETURNING "uuid"',
  `UPDATE "webhook_deliveries" SET "claimed_until" = ? WHERE "uuid" = ? AND "status" = 'pending' AND "next_attempt" <= ? ` +
    'AND ("claimed_until" IS NULL OR "claimed_until" < ?) RETURNING "uuid"',
);
const RECORD = statement(
  'UPDATE "webhook_deliveries" SET "status" = ?, "attempts" = ?, "next_attempt" = ?, "last_code" = ?, "last_attempt" = ?, ' +
    '"last_error" = ?, "claimed_until" = NULL WHERE "uuid" = ?',
  'UPDATE "webhook_deliveries" SET "status" = ?, "attempts" = ?, "next_attempt" = ?, "last_code" = ?, "last_attempt" = ?, ' +
    '"last_error" = ?, "claimed_until" = NULL WHERE "uuid" = ?',
);

const PRUNE_DELIVERIES = statement(`DELETE FROM "webhook_deliveries" WHERE "status" <> 'pending' AND "created" < ? RETURNING "seq"`);

function deliveryOf(raw: RawRow): WebhookDelivery {
  return {
    uuid: String(raw.uuid),
    webhook: String(raw.webhook),
    app: raw.app as string,
    event: String(raw.event),
    action: raw.action as string,
    payload: raw.payload as string,
    status: raw.status as DeliveryStatus,
    attempts: readInteger(raw.attempts),
    nextAttempt: readOptionalInstant(raw.next_attempt),
    lastCode: raw.last_code === null || raw.last_code === undefined ? null : readInteger(raw.last_code),
    lastAttempt: readOptionalInstant(raw.last_attempt),
    lastError: raw.last_error as string,
    created: readInstant(raw.created),
  };
}

/** DeliveryRepository on TypeORM: table `webhook_deliveries`, ordered by "seq". */
export class TypeOrmDeliveryRepository implements DeliveryRepository {
  constructor(private readonly session: Session) {}

  async create(d: WebhookDelivery): Promise<void> {
    const { dialect } = this.session;
    await write(this.session, CREATE_DELIVERY, [
      d.uuid, d.webhook, d.app, d.event, d.action, d.payload, d.status, d.attempts, writeOptionalInstant(dialect, d.nextAttempt),
      d.lastCode, writeOptionalInstant(dialect, d.lastAttempt), d.lastError, writeInstant(dialect, d.created),
    ]);
  }

  async listForWebhook(webhook: string, slice: Slice): Promise<Page<WebhookDelivery>> {
    const count = countOf(await this.session.rows<RawRow>(COUNT_DELIVERIES, [webhook]));
    const rows = await this.session.rows<RawRow>(PAGE_OF_DELIVERIES, [webhook, slice.limit, slice.offset]);
    return { count, items: rows.map(deliveryOf) };
  }

  async due(now: Date, limit: number): Promise<WebhookDelivery[]> {
    const at = writeInstant(this.session.dialect, now);
    return (await this.session.rows<RawRow>(DUE, [at, at, limit])).map(deliveryOf);
  }

  async claim(uuid: string, now: Date, until: Date): Promise<boolean> {
    const { dialect } = this.session;
    const at = writeInstant(dialect, now);
    return (await write(this.session, CLAIM, [writeInstant(dialect, until), uuid, at, at])).length > 0;
  }

  async record(d: WebhookDelivery): Promise<void> {
    const { dialect } = this.session;
    await write(this.session, RECORD, [
      d.status, d.attempts, writeOptionalInstant(dialect, d.nextAttempt), d.lastCode, writeOptionalInstant(dialect, d.lastAttempt), d.lastError, d.uuid,
    ]);
  }

  async prune(before: Date): Promise<number> {
    return (await write(this.session, PRUNE_DELIVERIES, [writeInstant(this.session.dialect, before)])).length;
  }
}
