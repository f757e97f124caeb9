import type { IdempotencyStore, IdempotentRequest, StoredResponse } from '@svc/core';
import type { RawRow } from './rows';
import type { Session } from './session';
import { ManagerRunner, readInstant, readJson, statement, writeInstant, writeJson, type Statement } from './sql';

// One statement: of two processes that begin the same key together, exactly one inserts.
const BEGIN = statement(
  'INSERT INTO "idempotency_keys" ("username", "key", "fingerprint", "response", "created") VALUES (?, ?, ?, NULL, ?) ' +
    'ON CONFLICT ("username", "key") DO NOTHING RETURNING "key"',
);
const FIND = statement('SELECT "username", "key", "fingerprint", "response", "created" FROM "idempotency_keys" WHERE "username" = ? AND "key" = ?');
const FINISH = statement('UPDATE "idempotency_keys" SET "response" = ? WHERE "username" = ? AND "key" = ?');
const FORGET = statement('DELETE FROM "idempotency_keys" WHERE "username" = ? AND "key" = ?');
const PRUNE = statement('DELETE FROM "idempotency_keys" WHERE "created" < ? RETURNING "key"');

/** IdempotencyStore in the `idempotency_keys` table, shared by every controller process on the database. */
export class TypeOrmIdempotencyStore implements IdempotencyStore {
  constructor(private readonly session: Session) {}

  private write(sql: Statement, params: readonly unknown[]): Promise<RawRow[]> {
    return this.session.write((manager) => new ManagerRunner(this.session.dialect, manager).rows<RawRow>(sql, params));
  }

  async begin(request: IdempotentRequest): Promise<IdempotentRequest | null> {
    const inserted = await this.write(BEGIN, [request.username, request.key, request.fingerprint, writeInstant(this.session.dialect, request.created)]);
    if (inserted.length > 0) return null;
    const [raw] = await this.session.rows<RawRow>(FIND, [request.username, request.key]);
    // Forgotten between the two statements: the caller may try again as the first.
    if (raw === undefined) return { ...request, fingerprint: request.fingerprint, response: null, created: new Date(0) };
    return {
      username: raw.username as string,
      key: raw.key as string,
      fingerprint: raw.fingerprint as string,
      response: raw.response === null || raw.response === undefined ? null : readJson<StoredResponse>(raw.response),
      created: readInstant(raw.created),
    };
  }

  async finish(username: string, key: string, response: StoredResponse): Promise<void> {
    await this.write(FINISH, [writeJson(response), username, key]);
  }

  async forget(username: string, key: string): Promise<void> {
    await this.write(FORGET, [username, key]);
  }

  async prune(before: Date): Promise<number> {
    return (await this.write(PRUNE, [writeInstant(this.session.dialect, before)])).length;
  }
}
