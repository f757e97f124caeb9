import type {
  LoginFailure,
  LoginFailureRepository,
  NewUser,
  Page,
  Slice,
  Token,
  TokenRepository,
  User,
  UserRepository,
} from '@svc/core';
import { Not } from 'typeorm';
import { translateUniqueViolation } from '../constraints';
import { fromUser, toToken, toUser } from '../mapping';
import { countOf, qualified, tokenRowOf, userRowOf, TOKEN_COLUMNS, USER_COLUMNS, type RawRow } from '../rows';
import type { Session } from '../session';
import { ManagerRunner, readInstant, statement, writeBoolean, writeInstant, writeOptionalInstant } from '../sql';

/** An arbitrary constant: the advisory lock that serialises transactions counting administrators. */
const ADMIN_COUNT_LOCK_KEY = 7_346_215_901;

const FIND_USER = statement(`SELECT ${USER_COLUMNS} FROM "users" WHERE "username" = ?`);
const LOCK_USER = statement(`SELECT ${USER_COLUMNS} FROM "users" WHERE "username" = ? FOR UPDATE`);
const UPDATE_USER = statement(
  'UPDATE "users" SET "email" = ?, "first_name" = ?, "last_name" = ?, "password_hash" = ?, "is_superuser" = ?, "is_staff" = ?, ' +
    '"is_active" = ?, "last_login" = ?, "date_joined" = ? WHERE "username" = ?',
);
const INSERT_TOKEN = statement(`INSERT INTO "tokens" (${TOKEN_COLUMNS}) VALUES (?, ?, ?, ?)`);
const FIND_TOKEN = statement(`SELECT ${TOKEN_COLUMNS} FROM "tokens" WHERE "hash" = ?`);
// The token's columns under other names, so that they do not collide with the user's.
const FIND_TOKEN_WITH_USER = statement(
  `SELECT t."hash" AS "token_hash", t."created" AS "token_created", t."expires" AS "token_expires", ${qualified('u', USER_COLUMNS)} ` +
    'FROM "tokens" t JOIN "users" u ON u."username" = t."username" WHERE t."hash" = ?',
);
const FAILURES_SINCE = statement('SELECT "at" FROM "login_failures" WHERE "username" = ? AND "at" >= ? ORDER BY "at" ASC, "id" ASC');
const RECENT_FAILURES = statement(
  'SELECT "at", "address" FROM "login_failures" WHERE "username" = ? AND "at" >= ? ORDER BY "at" ASC, "id" ASC',
);
const CLEAR_FAILURES = statement('DELETE FROM "login_failures" WHERE "username" = ?');
// Records of one address count one after another across processes; SQLite runs one writing transaction at a time already.
const LOCK_ADDRESS = statement('SELECT 1', "SELECT pg_advisory_xact_lock(hashtext('login_failures'), hashtext(?))");
const INSERT_FAILURE = statement('INSERT INTO "login_failures" ("username", "at", "address") VALUES (?, ?, ?)');
const COUNT_FROM = statement('SELECT COUNT(*) AS "n" FROM "login_failures" WHERE "address" = ? AND "at" >= ?');
const CLEAR_FAILURES_FROM = statement('DELETE FROM "login_failures" WHERE "username" = ? AND "address" = ?');

/** UserRepository on TypeORM. */
export class TypeOrmUserRepository implements UserRepository {
  constructor(private readonly session: Session) {}

  async findByUsername(username: string): Promise<User | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_USER, [username]);
    return raw === undefined ? null : toUser(userRowOf(raw));
  }

  async lockByUsername(username: string): Promise<User | null> {
    // As the apps' lockById: only PostgreSQL has row locks; on SQLite the unit of work
    // already runs one writing transaction at a time.
    if (!this.session.transactional || this.session.dialect !== 'postgres') return this.findByUsername(username);
    const [raw] = await this.session.rows<RawRow>(LOCK_USER, [username]);
    return raw === undefined ? null : toUser(userRowOf(raw));
  }

  create(user: NewUser): Promise<User> {
    return this.session.guarded(async (manager) => {
      const row = fromUser(user);
      try {
        const result = await manager.insert(this.session.schemas.users, row);
        const id = Number(result.identifiers[0]?.['id']);
        return toUser({ ...row, id });
      } catch (error) {
        throw translateUniqueViolation(error);
      }
    });
  }

  async update(user: User): Promise<void> {
    // The username is immutable: other tables refer to users by it.
    const { dialect } = this.session;
    const row = fromUser(user);
    await this.session.write((manager) =>
      new ManagerRunner(dialect, manager).run(UPDATE_USER, [
        row.email,
        row.first_name,
        row.last_name,
        row.password_hash,
        writeBoolean(dialect, row.is_superuser),
        writeBoolean(dialect, row.is_staff),
        writeBoolean(dialect, row.is_active),
        writeOptionalInstant(dialect, row.last_login),
        writeInstant(dialect, row.date_joined),
        row.username,
      ]),
    );
  }

  async delete(username: string): Promise<void> {
    await this.session.write(async (manager) => {
      // Login failures are kept by username without a foreign key (unknown names are
      // throttled too), so they are removed here; everything else goes by cascade.
      await manager.delete(this.session.schemas.loginFailures, { username });
      await manager.delete(this.session.schemas.users, { username });
    });
  }

  list(slice: Slice): Promise<Page<User>> {
    return this.page(slice, false);
  }

  listAdmins(slice: Slice): Promise<Page<User>> {
    return this.page(slice, true);
  }

  countAdmins(): Promise<number> {
    return this.session.read(async (manager) => {
      // Decisions follow from this count (the first user becomes administrator, the last one
      // keeps the role). PostgreSQL runs transactions side by side, so two of them could both
      // count zero (or two) and both act: a transaction-scoped advisory lock makes them take
      // turns, and each count then sees what the one before committed. SQLite already runs one
      // writing transaction at a time.
      if (this.session.transactional && this.session.dialect === 'postgres') {
        await manager.query(`SELECT pg_advisory_xact_lock(${ADMIN_COUNT_LOCK_KEY})`);
      }
      return manager.countBy(this.session.schemas.users, { is_superuser: true });
    });
  }

  private page(slice: Slice, adminsOnly: boolean): Promise<Page<User>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.users, {
        where: adminsOnly ? { is_superuser: true } : {},
        order: { id: 'ASC' },
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toUser) };
    });
  }
}

/** TokenRepository on TypeORM. */
export class TypeOrmTokenRepository implements TokenRepository {
  constructor(private readonly session: Session) {}

  async add(token: Token): Promise<void> {
    const { dialect } = this.session;
    await this.session.write((manager) =>
      new ManagerRunner(dialect, manager).run(INSERT_TOKEN, [
        token.hash,
        token.username,
        writeInstant(dialect, token.created),
        writeOptionalInstant(dialect, token.expires),
      ]),
    );
  }

  async findByHash(hash: string): Promise<Token | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_TOKEN, [hash]);
    return raw === undefined ? null : toToken(tokenRowOf(raw));
  }

  async findWithUser(hash: string): Promise<{ token: Token; user: User } | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_TOKEN_WITH_USER, [hash]);
    if (raw === undefined) return null;
    const user = toUser(userRowOf(raw));
    const token = toToken(tokenRowOf({ hash: raw.token_hash, username: user.username, created: raw.token_created, expires: raw.token_expires }));
    return { token, user };
  }

  async deleteForUser(username: string): Promise<void> {
    await this.session.write((manager) => manager.delete(this.session.schemas.tokens, { username }));
  }

  async deleteForUserExcept(username: string, keepHash: string): Promise<void> {
    await this.session.write((manager) =>
      manager.delete(this.session.schemas.tokens, { username, hash: Not(keepHash) }),
    );
  }

  async deleteAll(): Promise<void> {
    await this.session.write((manager) =>
      manager.createQueryBuilder().delete().from(this.session.schemas.tokens).execute(),
    );
  }
}

/** LoginFailureRepository on TypeORM. */
export class TypeOrmLoginFailureRepository implements LoginFailureRepository {
  constructor(private readonly session: Session) {}

  async record(username: string, at: Date, address = ''): Promise<void> {
    await this.session.write((manager) =>
      manager.insert(this.session.schemas.loginFailures, { username, at: new Date(at.getTime()), address }),
    );
  }

  async recordCounting(username: string, at: Date, address: string, since: Date): Promise<number> {
    const { dialect } = this.session;
    return this.session.write(async (manager) => {
      const sql = new ManagerRunner(dialect, manager);
      if (dialect === 'postgres') await sql.rows(LOCK_ADDRESS, [address]);
      await sql.run(INSERT_FAILURE, [username, writeInstant(dialect, at), address]);
      return countOf(await sql.rows<RawRow>(COUNT_FROM, [address, writeInstant(dialect, since)]));
    });
  }

  async recent(username: string, since: Date): Promise<LoginFailure[]> {
    const rows = await this.session.rows<RawRow>(RECENT_FAILURES, [username, writeInstant(this.session.dialect, since)]);
    return rows.map((row) => ({ at: new Date(readInstant(row.at).getTime()), address: String(row.address ?? '') }));
  }

  async since(username: string, since: Date): Promise<Date[]> {
    const rows = await this.session.rows<RawRow>(FAILURES_SINCE, [username, writeInstant(this.session.dialect, since)]);
    return rows.map((row) => new Date(readInstant(row.at).getTime()));
  }

  async clear(username: string, address?: string): Promise<void> {
    await this.session.write((manager) =>
      address === undefined
        ? new ManagerRunner(this.session.dialect, manager).run(CLEAR_FAILURES, [username])
        : new ManagerRunner(this.session.dialect, manager).run(CLEAR_FAILURES_FROM, [username, address]),
    );
  }
}
