import type { BuildSlot, BuildSlotClaim, BuildSlotStore } from '@svc/core';
import type { RawRow } from './rows';
import type { Session } from './session';
import { ManagerRunner, statement, writeInstant } from './sql';

/** A row of `build_slots`: one running build, counted against its user until it ends or expires. */
export interface BuildSlotRow {
  build: string;
  username: string;
  started: Date;
  expires: Date;
}

// PostgreSQL: a lock of the user's own held until the transaction ends, so that two
// controllers counting the same user's slots count one after the other (no row of the user
// need exist yet). SQLite: the first write of the transaction (the delete) takes the
// database's write lock, which every other process's write waits for.
const LOCK_USER = statement('SELECT 1', "SELECT pg_advisory_xact_lock(hashtext('build_slots'), hashtext(?))");
const DELETE_EXPIRED = statement('DELETE FROM "build_slots" WHERE "username" = ? AND "expires" <= ?');
const COUNT = statement('SELECT COUNT(*) AS "held" FROM "build_slots" WHERE "username" = ?');
const INSERT = statement('INSERT INTO "build_slots" ("build", "username", "started", "expires") VALUES (?, ?, ?, ?)');
const RENEW = statement('UPDATE "build_slots" SET "expires" = ? WHERE "build" = ?');
const RELEASE = statement('DELETE FROM "build_slots" WHERE "build" = ?');

/** BuildSlotStore in the `build_slots` table, shared by every controller process on the database. */
export class TypeOrmBuildSlotStore implements BuildSlotStore {
  constructor(private readonly session: Session) {}

  acquire(slot: BuildSlot, limit: number, now: Date): Promise<BuildSlotClaim> {
    const dialect = this.session.dialect;
    return this.session.write(async (manager) => {
      const sql = new ManagerRunner(dialect, manager);
      if (dialect === 'postgres') await sql.rows(LOCK_USER, [slot.username]);
      await sql.rows(DELETE_EXPIRED, [slot.username, writeInstant(dialect, now)]);
      const [row] = await sql.rows<RawRow>(COUNT, [slot.username]);
      const held = Number(row?.held ?? 0);
      if (held >= limit) return { taken: false, held };
      await sql.rows(INSERT, [slot.build, slot.username, writeInstant(dialect, slot.started), writeInstant(dialect, slot.expires)]);
      return { taken: true, held };
    });
  }

  async renew(build: string, expires: Date): Promise<void> {
    const dialect = this.session.dialect;
    await this.session.write((manager) => new ManagerRunner(dialect, manager).rows(RENEW, [writeInstant(dialect, expires), build]));
  }

  async release(build: string): Promise<void> {
    await this.session.write((manager) => new ManagerRunner(this.session.dialect, manager).rows(RELEASE, [build]));
  }
}
