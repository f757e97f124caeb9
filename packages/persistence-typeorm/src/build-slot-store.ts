import type { BuildSlot, BuildSlotClaim, BuildSlotStore } from '@svc/core';
import type { RawRow } from './rows';
import type { Session } from './session';
import { ManagerRunner, statement, writeInstant, type Statement } from './sql';

/** A row of `build_slots`: one running build, counted against its user until it ends or expires. */
export interface BuildSlotRow {
  build: string;
  username: string;
  started: Date;
  expires: Date;
}

/**
 * A table of slots and the name of its id column: `build_slots` (`build`) for
 * QUOTA_BUILDS_PER_USER, `run_slots` (`run`) for QUOTA_RUNS_PER_USER. Both have the same
 * columns otherwise and are counted the same way.
 */
export interface SlotTable {
  table: 'build_slots' | 'run_slots';
  id: 'build' | 'run';
}

/** The table of running builds. */
export const BUILD_SLOTS: SlotTable = Object.freeze({ table: 'build_slots', id: 'build' });
/** The table of running one-off processes (`run`s and release phases), charged to the apps' owners. */
export const RUN_SLOTS: SlotTable = Object.freeze({ table: 'run_slots', id: 'run' });

interface SlotStatements {
  lockUser: Statement;
  deleteExpired: Statement;
  count: Statement;
  insert: Statement;
  renew: Statement;
  release: Statement;
}

function slotStatements({ table, id }: SlotTable): SlotStatements {
  return {
    // PostgreSQL: a lock of the user's own held until the transaction ends, so that two
    // controllers counting the same user's slots count one after the other (no row of the user
    // need exist yet). SQLite: the first write of the transaction (the delete) takes the
    // database's write lock, which every other process's write waits for.
    lockUser: statement('SELECT 1', `SELECT pg_advisory_xact_lock(hashtext('${table}'), hashtext(?))`),
    deleteExpired: statement(`DELETE FROM "${table}" WHERE "username" = ? AND "expires" <= ?`),
    count: statement(`SELECT COUNT(*) AS "held" FROM "${table}" WHERE "username" = ?`),
    insert: statement(`INSERT INTO "${table}" ("${id}", "username", "started", "expires") VALUES (?, ?, ?, ?)`),
    renew: statement(`UPDATE "${table}" SET "expires" = ? WHERE "${id}" = ?`),
    release: statement(`DELETE FROM "${table}" WHERE "${id}" = ?`),
  };
}

/**
 * BuildSlotStore in a table of slots (`build_slots` by default, `run_slots` for one-off
 * processes), shared by every controller process on the database. A slot's `build` field is
 * the id of whatever holds it.
 */
export class TypeOrmBuildSlotStore implements BuildSlotStore {
  private readonly sql: SlotStatements;

  constructor(
    private readonly session: Session,
    table: SlotTable = BUILD_SLOTS,
  ) {
    this.sql = slotStatements(table);
  }

  acquire(slot: BuildSlot, limit: number, now: Date): Promise<BuildSlotClaim> {
    const dialect = this.session.dialect;
    return this.session.write(async (manager) => {
      const sql = new ManagerRunner(dialect, manager);
      if (dialect === 'postgres') await sql.rows(this.sql.lockUser, [slot.username]);
      await sql.rows(this.sql.deleteExpired, [slot.username, writeInstant(dialect, now)]);
      const [row] = await sql.rows<RawRow>(this.sql.count, [slot.username]);
      const held = Number(row?.held ?? 0);
      if (held >= limit) return { taken: false, held };
      await sql.rows(this.sql.insert, [slot.build, slot.username, writeInstant(dialect, slot.started), writeInstant(dialect, slot.expires)]);
      return { taken: true, held };
    });
  }

  async renew(build: string, expires: Date): Promise<void> {
    const dialect = this.session.dialect;
    await this.session.write((manager) => new ManagerRunner(dialect, manager).rows(this.sql.renew, [writeInstant(dialect, expires), build]));
  }

  async release(build: string): Promise<void> {
    await this.session.write((manager) => new ManagerRunner(this.session.dialect, manager).rows(this.sql.release, [build]));
  }
}
