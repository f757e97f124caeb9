import type { IssuanceBackoff, TlsName, TlsState, TlsStore } from '@svc/core';
import type { RawRow } from './rows';
import type { Session } from './session';
import { ManagerRunner, readInstant, readInteger, statement, writeInstant, writeOptionalInstant, type Statement } from './sql';

const COLUMNS = '"name", "app", "state", "certificate", "sealed_key", "expires", "reason", "failures", "next_attempt", "updated"';

const LIST = statement(`SELECT ${COLUMNS} FROM "tls_names" ORDER BY "name"`);
const LIST_FOR_APP = statement(`SELECT ${COLUMNS} FROM "tls_names" WHERE "app" = ? ORDER BY "name"`);
const FIND = statement(`SELECT ${COLUMNS} FROM "tls_names" WHERE "name" = ?`);
const INSERT = statement(`INSERT INTO "tls_names" (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ("name") DO NOTHING`);
// Written only by the holder of the name's lease: a process whose lease was taken over writes nothing.
const SAVE = statement(
  'UPDATE "tls_names" SET "app" = ?, "state" = ?, "certificate" = ?, "sealed_key" = ?, "expires" = ?, "reason" = ?, "failures" = ?, "next_attempt" = ?, "updated" = ? ' +
    'WHERE "name" = ? AND "lease_holder" = ? RETURNING "name"',
);
const REMOVE = statement('DELETE FROM "tls_names" WHERE "name" = ?');
// One statement: of two processes asking at once, only one finds the lease free.
const ACQUIRE = statement(
  'UPDATE "tls_names" SET "lease_holder" = ?, "lease_expires" = ? WHERE "name" = ? AND ("lease_holder" IS NULL OR "lease_expires" <= ?) RETURNING "name"',
);
const RELEASE = statement('UPDATE "tls_names" SET "lease_holder" = NULL, "lease_expires" = NULL WHERE "name" = ? AND "lease_holder" = ?');
const CHALLENGE = statement('SELECT "key_authorization" FROM "acme_challenges" WHERE "token" = ? AND "name" = ? AND "expires" > ?');
const PUT_CHALLENGE = statement(
  'INSERT INTO "acme_challenges" ("token", "key_authorization", "name", "expires") VALUES (?, ?, ?, ?) ' +
    'ON CONFLICT ("token") DO UPDATE SET "key_authorization" = excluded."key_authorization", "name" = excluded."name", "expires" = excluded."expires"',
);
const REMOVE_CHALLENGE = statement('DELETE FROM "acme_challenges" WHERE "token" = ?');
const EXPIRED_CHALLENGES = statement('DELETE FROM "acme_challenges" WHERE "expires" <= ?');
const ACCOUNT = statement('SELECT "sealed_key" FROM "acme_accounts" WHERE "directory" = ?');
const SAVE_ACCOUNT = statement('INSERT INTO "acme_accounts" ("directory", "sealed_key", "created") VALUES (?, ?, ?) ON CONFLICT ("directory") DO NOTHING');
const REDIRECT = statement('SELECT "https_redirect" FROM "app_tls" WHERE "app" = ?');
const REDIRECT_APPS = statement('SELECT "app" FROM "app_tls" WHERE "https_redirect" = ? ORDER BY "app"');
const SET_REDIRECT = statement(
  'INSERT INTO "app_tls" ("app", "https_redirect") VALUES (?, ?) ON CONFLICT ("app") DO UPDATE SET "https_redirect" = excluded."https_redirect"',
);
const BACKOFF = statement('SELECT "name", "owner", "failures", "next_attempt", "reason" FROM "acme_backoffs" WHERE "name" = ? AND "owner" = ?');
const KEEP_BACKOFF = statement(
  'INSERT INTO "acme_backoffs" ("name", "owner", "failures", "next_attempt", "reason") VALUES (?, ?, ?, ?, ?) ' +
    'ON CONFLICT ("name", "owner") DO UPDATE SET "failures" = excluded."failures", "next_attempt" = excluded."next_attempt", "reason" = excluded."reason"',
);
const FORGET_BACKOFF = statement('DELETE FROM "acme_backoffs" WHERE "name" = ? AND "owner" = ?');
const FORGET_BACKOFFS_BEFORE = statement('DELETE FROM "acme_backoffs" WHERE "next_attempt" < ?');
// One pause for new orders; a later one already recorded (by any process) stays.
const PAUSE = statement(
  'INSERT INTO "acme_pauses" ("kind", "until") VALUES (\'new-order\', ?) ' +
    'ON CONFLICT ("kind") DO UPDATE SET "until" = CASE WHEN "acme_pauses"."until" > excluded."until" THEN "acme_pauses"."until" ELSE excluded."until" END',
);
const PAUSED_UNTIL = statement('SELECT "until" FROM "acme_pauses" WHERE "kind" = \'new-order\' AND "until" > ?');

function nameOf(raw: RawRow): TlsName {
  return {
    name: raw.name as string,
    app: raw.app as string,
    state: raw.state as TlsState,
    certificate: (raw.certificate as string | null) ?? null,
    sealedKey: (raw.sealed_key as string | null) ?? null,
    expires: raw.expires === null || raw.expires === undefined ? null : readInstant(raw.expires),
    reason: (raw.reason as string | null) ?? null,
    failures: readInteger(raw.failures),
    nextAttempt: readInstant(raw.next_attempt),
    updated: readInstant(raw.updated),
  };
}

/**
 * TlsStore on TypeORM: tables `tls_names` (with each name's issuance lease),
 * `acme_challenges`, `acme_accounts`, `app_tls`, `acme_backoffs` and `acme_pauses`. Every method is one statement, so that
 * controller processes sharing a PostgreSQL database agree on who issues a name.
 */
export class TypeOrmTlsStore implements TlsStore {
  constructor(
    private readonly session: Session,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private async write(sql: Statement, params: readonly unknown[]): Promise<RawRow[]> {
    const { dialect } = this.session;
    return this.session.write((manager) => new ManagerRunner(dialect, manager).rows<RawRow>(sql, params));
  }

  private instant(date: Date): string | Date {
    return writeInstant(this.session.dialect, date);
  }

  async list(): Promise<TlsName[]> {
    return (await this.session.rows<RawRow>(LIST, [])).map(nameOf);
  }

  async listForApp(app: string): Promise<TlsName[]> {
    return (await this.session.rows<RawRow>(LIST_FOR_APP, [app])).map(nameOf);
  }

  async find(name: string): Promise<TlsName | null> {
    const [raw] = await this.session.rows<RawRow>(FIND, [name]);
    return raw === undefined ? null : nameOf(raw);
  }

  private fields(row: TlsName): unknown[] {
    const { dialect } = this.session;
    return [row.app, row.state, row.certificate, row.sealedKey, writeOptionalInstant(dialect, row.expires), row.reason, row.failures, this.instant(row.nextAttempt), this.instant(row.updated)];
  }

  async insert(row: TlsName): Promise<void> {
    await this.write(INSERT, [row.name, ...this.fields(row)]);
  }

  async save(row: TlsName, holder: string): Promise<boolean> {
    return (await this.write(SAVE, [...this.fields(row), row.name, holder])).length > 0;
  }

  async remove(name: string): Promise<void> {
    await this.write(REMOVE, [name]);
  }

  async acquire(name: string, holder: string, until: Date, now: Date): Promise<boolean> {
    return (await this.write(ACQUIRE, [holder, this.instant(until), name, this.instant(now)])).length > 0;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.write(RELEASE, [name, holder]);
  }

  async challenge(token: string, host: string): Promise<string | null> {
    const [raw] = await this.session.rows<RawRow>(CHALLENGE, [token, host.toLowerCase(), this.instant(this.now())]);
    return raw === undefined ? null : (raw.key_authorization as string);
  }

  async putChallenge(token: string, keyAuthorization: string, name: string, expires: Date): Promise<void> {
    // Answers left behind by a process that died mid-issuance go with the next one.
    await this.write(EXPIRED_CHALLENGES, [this.instant(this.now())]);
    await this.write(PUT_CHALLENGE, [token, keyAuthorization, name.toLowerCase(), this.instant(expires)]);
  }

  async removeChallenge(token: string): Promise<void> {
    await this.write(REMOVE_CHALLENGE, [token]);
  }

  async account(directory: string): Promise<string | null> {
    const [raw] = await this.session.rows<RawRow>(ACCOUNT, [directory]);
    return raw === undefined ? null : (raw.sealed_key as string);
  }

  async saveAccount(directory: string, sealedKey: string, created: Date): Promise<string> {
    await this.write(SAVE_ACCOUNT, [directory, sealedKey, this.instant(created)]);
    const stored = await this.account(directory);
    if (stored === null) throw new Error('The ACME account key could not be stored');
    return stored;
  }

  async httpsRedirect(app: string): Promise<boolean> {
    const [raw] = await this.session.rows<RawRow>(REDIRECT, [app]);
    return raw !== undefined && (raw.https_redirect === true || raw.https_redirect === 1);
  }

  async httpsRedirectApps(): Promise<string[]> {
    const rows = await this.session.rows<RawRow>(REDIRECT_APPS, [this.session.dialect === 'sqlite' ? 1 : true]);
    return rows.map((raw) => raw.app as string);
  }

  async setHttpsRedirect(app: string, on: boolean): Promise<void> {
    await this.write(SET_REDIRECT, [app, this.session.dialect === 'sqlite' ? (on ? 1 : 0) : on]);
  }

  async backoff(name: string, owner: string): Promise<IssuanceBackoff | null> {
    const [raw] = await this.session.rows<RawRow>(BACKOFF, [name, owner]);
    if (raw === undefined) return null;
    return {
      name: raw.name as string,
      owner: raw.owner as string,
      failures: readInteger(raw.failures),
      nextAttempt: readInstant(raw.next_attempt),
      reason: (raw.reason as string | null) ?? null,
    };
  }

  async keepBackoff(backoff: IssuanceBackoff): Promise<void> {
    await this.write(KEEP_BACKOFF, [backoff.name, backoff.owner, backoff.failures, this.instant(backoff.nextAttempt), backoff.reason]);
  }

  async forgetBackoff(name: string, owner: string): Promise<void> {
    await this.write(FORGET_BACKOFF, [name, owner]);
  }

  async forgetBackoffsBefore(cutoff: Date): Promise<void> {
    await this.write(FORGET_BACKOFFS_BEFORE, [this.instant(cutoff)]);
  }

  async pauseOrders(until: Date): Promise<void> {
    await this.write(PAUSE, [this.instant(until)]);
  }

  async ordersPausedUntil(now: Date): Promise<Date | null> {
    const [raw] = await this.session.rows<RawRow>(PAUSED_UNTIL, [this.instant(now)]);
    return raw === undefined ? null : readInstant(raw.until);
  }
}
