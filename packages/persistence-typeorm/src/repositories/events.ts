import type { AuditEvent, EventQuery, EventRepository, Page, Slice } from '@svc/core';
import type { RawRow } from '../rows';
import { countOf } from '../rows';
import type { Session } from '../session';
import { ManagerRunner, readInstant, readInteger, statement, writeInstant } from '../sql';

const EVENT_COLUMNS = '"uuid", "created", "actor", "action", "app", "app_uuid", "target", "summary", "request_id", "address"';

/*
 * On PostgreSQL an append first takes a transaction-level advisory lock, held until the
 * transaction ends: appends commit one at a time, so "seq" order is commit order and a
 * follower reading past its last seq never skips an event that commits later with a lower
 * one. The NOTIFY is delivered when (and only if) the transaction commits. SQLite runs one
 * writing transaction at a time already.
 */
const JOURNAL_LOCK = statement('SELECT pg_advisory_xact_lock(7348201)');
const NOTIFY = statement("SELECT pg_notify('svc_events', '')");
const APPEND = statement(`INSERT INTO "events" (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
const SEQ_OF = statement('SELECT "seq" FROM "events" WHERE "uuid" = ?', 'SELECT "seq" FROM "events" WHERE "uuid" = ?');
const NEWEST = statement('SELECT "uuid", "seq" FROM "events" WHERE "app_uuid" = ? ORDER BY "seq" DESC LIMIT 1');
const AFTER = statement(`SELECT ${EVENT_COLUMNS} FROM "events" WHERE "app_uuid" = ? AND "seq" > ? ORDER BY "seq" LIMIT ?`);
const PRUNE = statement('DELETE FROM "events" WHERE "created" < ? RETURNING "seq"');

function eventOf(raw: RawRow): AuditEvent {
  return {
    uuid: String(raw.uuid),
    created: readInstant(raw.created),
    actor: raw.actor as string,
    action: raw.action as string,
    app: (raw.app as string | null) ?? null,
    appUuid: (raw.app_uuid as string | null) ?? null,
    target: raw.target as string,
    summary: raw.summary as string,
    requestId: raw.request_id as string,
    address: raw.address as string,
  };
}

/** The visibility and filter conditions of a query, with their parameters. */
function conditionsOf(session: Session, query: EventQuery): { where: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (query.app !== undefined) {
    clauses.push('"app" = ?');
    params.push(query.app);
  }
  if (query.appUuid !== undefined) {
    clauses.push('"app_uuid" = ?');
    params.push(query.appUuid);
  }
  if (query.actor !== undefined) {
    clauses.push('"actor" = ?');
    params.push(query.actor);
  }
  if (query.action !== undefined) {
    if (query.action.includes('.')) {
      clauses.push('"action" = ?');
      params.push(query.action);
    } else {
      // A resource: every action `<resource>.<verb>`. Actions are [a-z_.]: no LIKE metacharacter but `_`, escaped.
      clauses.push(`"action" LIKE ? ESCAPE '\\'`);
      params.push(`${query.action.replace(/_/g, '\\_')}.%`);
    }
  }
  if (query.since !== undefined) {
    clauses.push('"created" >= ?');
    params.push(writeInstant(session.dialect, query.since));
  }
  if (query.visibleTo) {
    // By the app's uuid: the events of a deleted app (another uuid, or none) are not those of an app that took its name.
    clauses.push(
      '(("app" IS NOT NULL AND ("app_uuid" IN (SELECT "uuid" FROM "apps" WHERE "owner" = ?)' +
        ' OR "app_uuid" IN (SELECT "a"."uuid" FROM "apps" "a" JOIN "permissions" "p" ON "p"."app" = "a"."id" WHERE "p"."username" = ?)))' +
        ' OR ("app" IS NULL AND ("actor" = ? OR "target" = ?)))',
    );
    params.push(query.visibleTo, query.visibleTo, query.visibleTo, query.visibleTo);
  }
  return { where: clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`, params };
}

/** EventRepository on TypeORM: table `events`, ordered by "seq". */
export class TypeOrmEventRepository implements EventRepository {
  /**
   * Whether this transaction's session holds the journal lock and has queued its NOTIFY: both
   * last until the transaction ends (identical notifications of one transaction are sent
   * once), so a change journaled in several entries takes and queues them once.
   */
  private lockedForTransaction = false;

  constructor(private readonly session: Session) {}

  async append(event: AuditEvent): Promise<void> {
    const { dialect } = this.session;
    const postgres = dialect === 'postgres';
    const first = !(this.session.transactional && this.lockedForTransaction);
    await this.session.write(async (manager) => {
      const sql = new ManagerRunner(dialect, manager);
      if (postgres && first) await sql.rows(JOURNAL_LOCK, []);
      await sql.run(APPEND, [
        event.uuid, writeInstant(dialect, event.created), event.actor, event.action, event.app, event.appUuid,
        event.target, event.summary, event.requestId, event.address,
      ]);
      if (postgres && first) await sql.rows(NOTIFY, []);
    });
    if (this.session.transactional) this.lockedForTransaction = true;
  }

  async list(query: EventQuery, slice: Slice): Promise<Page<AuditEvent>> {
    const { where, params } = conditionsOf(this.session, query);
    const count = countOf(await this.session.rows<RawRow>(statement(`SELECT COUNT(*) AS "n" FROM "events" ${where}`), params));
    const rows = await this.session.rows<RawRow>(
      statement(`SELECT ${EVENT_COLUMNS} FROM "events" ${where} ORDER BY "seq" DESC LIMIT ? OFFSET ?`),
      [...params, slice.limit, slice.offset],
    );
    return { count, items: rows.map(eventOf) };
  }

  async after(appUuid: string, after: string | null, limit: number): Promise<AuditEvent[]> {
    let seq = 0;
    if (after !== null) {
      const [known] = await this.session.rows<RawRow>(SEQ_OF, [after]);
      if (known !== undefined) seq = readInteger(known.seq);
      else {
        const [newest] = await this.session.rows<RawRow>(NEWEST, [appUuid]);
        seq = newest === undefined ? 0 : readInteger(newest.seq);
      }
    }
    return (await this.session.rows<RawRow>(AFTER, [appUuid, seq, limit])).map(eventOf);
  }

  async newest(appUuid: string): Promise<string | null> {
    const [row] = await this.session.rows<RawRow>(NEWEST, [appUuid]);
    return row === undefined ? null : String(row.uuid);
  }

  async prune(before: Date): Promise<number> {
    const { dialect } = this.session;
    const rows = await this.session.write((manager) => new ManagerRunner(dialect, manager).rows<RawRow>(PRUNE, [writeInstant(dialect, before)]));
    return rows.length;
  }
}
