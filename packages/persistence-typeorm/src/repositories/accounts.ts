import type {
  LoginFailureRepository,
  NewUser,
  Page,
  Slice,
  Token,
  TokenRepository,
  User,
  UserRepository,
} from '@svc/core';
import { MoreThanOrEqual, Not } from 'typeorm';
import { translateUniqueViolation } from '../constraints';
import { fromToken, fromUser, toToken, toUser } from '../mapping';
import type { Session } from '../session';

/** An arbitrary constant: the advisory lock that serialises transactions counting administrators. */
const ADMIN_COUNT_LOCK_KEY = 7_346_215_901;

/** UserRepository on TypeORM. */
export class TypeOrmUserRepository implements UserRepository {
  constructor(private readonly session: Session) {}

  findByUsername(username: string): Promise<User | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.users, { username });
      return row === null ? null : toUser(row);
    });
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
    const { username, ...changes } = fromUser(user);
    await this.session.write((manager) => manager.update(this.session.schemas.users, { username }, changes));
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
    await this.session.write((manager) => manager.insert(this.session.schemas.tokens, fromToken(token)));
  }

  findByHash(hash: string): Promise<Token | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.tokens, { hash });
      return row === null ? null : toToken(row);
    });
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

  async record(username: string, at: Date): Promise<void> {
    await this.session.write((manager) =>
      manager.insert(this.session.schemas.loginFailures, { username, at: new Date(at.getTime()) }),
    );
  }

  since(username: string, since: Date): Promise<Date[]> {
    return this.session.read(async (manager) => {
      const rows = await manager.find(this.session.schemas.loginFailures, {
        where: { username, at: MoreThanOrEqual(since) },
        order: { at: 'ASC', id: 'ASC' },
      });
      return rows.map((row) => new Date(row.at.getTime()));
    });
  }

  async clear(username: string): Promise<void> {
    await this.session.write((manager) => manager.delete(this.session.schemas.loginFailures, { username }));
  }
}
