import type {
  DeliveryRepository,
  DeliveryStatus,
  DueDelivery,
  EndpointHealth,
  EndpointStatus,
  Page,
  Slice,
  Webhook,
  WebhookDelivery,
  WebhookRepository,
} from '@svc/core';
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

const HOOK_COLUMNS = '"uuid", "app", "owner", "url", "events", "sealed_secret", "created", "status", "failures", "last_error", "resumes_at"';
const CREATE_HOOK = statement(`INSERT INTO "webhooks" (${HOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
const FIND_HOOK = statement(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "uuid" = ?`, `SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "uuid" = ?`);
const HOOKS_OF_APP = statement(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "app" = ? ORDER BY "created", "uuid"`);
const PAGE_OF_HOOKS = statement(`SELECT ${HOOK_COLUMNS} FROM "webhooks" WHERE "app" = ? ORDER BY "created", "uuid" LIMIT ? OFFSET ?`);
const COUNT_HOOKS = statement('SELECT COUNT(*) AS "n" FROM "webhooks" WHERE "app" = ?');
const DELETE_HOOK = statement('DELETE FROM "webhooks" WHERE "app" = ? AND "uuid" = ?', 'DELETE FROM "webhooks" WHERE "app" = ? AND "uuid" = ?');
const DELETE_HOOK_DELIVERIES = statement('DELETE FROM "webhook_deliveries" WHERE "webhook" = ?', 'DELETE FROM "webhook_deliveries" WHERE "webhook" = ?');
const DELETE_APP_HOOKS = statement('DELETE FROM "webhooks" WHERE "app" = ?');
const DELETE_APP_DELIVERIES = statement('DELETE FROM "webhook_deliveries" WHERE "app" = ?');
// One statement: of two processes that saw the same due webhook, one gets it.
const CLAIM_HOOK = statement(
  'UPDATE "webhooks" SET "claimed_until" = ? WHERE "uuid" = ? AND ("claimed_until" IS NULL OR "claimed_until" < ?) ' +
    'AND ("resumes_at" IS NULL OR "resumes_at" <= ?) RETURNING "uuid"',
);
const RELEASE_HOOK = statement(
  'UPDATE "webhooks" SET "status" = ?, "failures" = ?, "last_error" = ?, "resumes_at" = ?, "claimed_until" = NULL WHERE "uuid" = ?',
);

function webhookOf(raw: RawRow): Webhook {
  return {
    uuid: String(raw.uuid),
    app: raw.app as string,
    owner: raw.owner as string,
    url: raw.url as string,
    events: readJson<string[]>(raw.events),
    sealedSecret: raw.sealed_secret as string,
    created: readInstant(raw.created),
    health: {
      status: raw.status as EndpointStatus,
      failures: readInteger(raw.failures),
      lastError: raw.last_error as string,
      resumesAt: readOptionalInstant(raw.resumes_at),
    },
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
    const { dialect } = this.session;
    const { health } = webhook;
    await write(this.session, CREATE_HOOK, [
      webhook.uuid, webhook.app, webhook.owner, webhook.url, writeJson(webhook.events), webhook.sealedSecret,
      writeInstant(dialect, webhook.created), health.status, health.failures, health.lastError, writeOptionalInstant(dialect, health.resumesAt),
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

  async claim(uuid: string, now: Date, until: Date): Promise<boolean> {
    const { dialect } = this.session;
    const at = writeInstant(dialect, now);
    return (await write(this.session, CLAIM_HOOK, [writeInstant(dialect, until), uuid, at, at])).length > 0;
  }

  async release(uuid: string, health: EndpointHealth): Promise<void> {
    await write(this.session, RELEASE_HOOK, [health.status, health.failures, health.lastError, writeOptionalInstant(this.session.dialect, health.resumesAt), uuid]);
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
const PREFIXED_DELIVERY_COLUMNS = DELIVERY_COLUMNS.split(', ').map((column) => `d.${column}`).join(', ');
// Each webhook's oldest pending delivery (the partial index), when it is due and the
// webhook is free; ranked per owner so that one owner's backlog cannot fill the answer.
const DUE_HEADS = statement(
  `SELECT ${DELIVERY_COLUMNS}, "owner" FROM (SELECT ${PREFIXED_DELIVERY_COLUMNS}, d."seq", w."owner", ` +
    'ROW_NUMBER() OVER (PARTITION BY w."owner" ORDER BY d."seq") AS "turn" FROM "webhooks" w JOIN "webhook_deliveries" d ON d."seq" = ' +
    `(SELECT MIN(p."seq") FROM "webhook_deliveries" p WHERE p."webhook" = w."uuid" AND p."status" = 'pending') ` +
    'WHERE (w."claimed_until" IS NULL OR w."claimed_until" < ?) AND (w."resumes_at" IS NULL OR w."resumes_at" <= ?) AND d."next_attempt" <= ?) heads ' +
    'WHERE "turn" <= ? ORDER BY "seq" LIMIT ?',
);
const HEAD = statement(`SELECT ${DELIVERY_COLUMNS} FROM "webhook_deliveries" WHERE "webhook" = ? AND "status" = 'pending' ORDER BY "seq" LIMIT 1`);
const RECORD = statement(
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

  async dueHeads(now: Date, perOwner: number, limit: number): Promise<DueDelivery[]> {
    const at = writeInstant(this.session.dialect, now);
    const rows = await this.session.rows<RawRow>(DUE_HEADS, [at, at, at, perOwner, limit]);
    return rows.map((raw) => ({ delivery: deliveryOf(raw), owner: raw.owner as string }));
  }

  async head(webhook: string): Promise<WebhookDelivery | null> {
    const [raw] = await this.session.rows<RawRow>(HEAD, [webhook]);
    return raw === undefined ? null : deliveryOf(raw);
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
