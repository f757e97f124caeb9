import type { DeployLease, DeployLeaseRepository } from '@svc/core';
import type { Dialect } from '../dialect';
import type { RawRow } from '../rows';
import type { Session } from '../session';
import { ManagerRunner, readInstant, readInteger, readJson, statement, writeInstant, writeJson, type Statement } from '../sql';

const LEASE_COLUMNS = '"app", "holder", "version", "containers", "started", "heartbeat", "expires"';

// Each method is one statement, atomic on its own: the condition on the holder is what
// keeps two controller processes from both believing they hold an app.
const INSERT_LEASE = statement(
  `INSERT INTO "deploys" (${LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT ("app") DO NOTHING RETURNING "app"`,
);
const FIND_LEASE = statement(`SELECT ${LEASE_COLUMNS} FROM "deploys" WHERE "app" = ?`);
const REPLACE_LEASE = statement(
  'UPDATE "deploys" SET "holder" = ?, "version" = ?, "containers" = ?, "started" = ?, "heartbeat" = ?, "expires" = ? ' +
    'WHERE "app" = ? AND "holder" = ? RETURNING "app"',
);
const REMOVE_LEASE = statement('DELETE FROM "deploys" WHERE "app" = ? AND "holder" = ? RETURNING "app"');
const ALL_LEASES = statement(`SELECT ${LEASE_COLUMNS} FROM "deploys" ORDER BY "started", "app"`);

function leaseOf(raw: RawRow): DeployLease {
  return {
    app: raw.app as string,
    holder: raw.holder as string,
    version: raw.version === null || raw.version === undefined ? null : readInteger(raw.version),
    containers: readJson<string[]>(raw.containers),
    started: readInstant(raw.started),
    heartbeat: readInstant(raw.heartbeat),
    expires: readInstant(raw.expires),
  };
}

function fieldsOf(dialect: Dialect, lease: DeployLease): unknown[] {
  return [
    lease.holder,
    lease.version,
    writeJson(lease.containers),
    writeInstant(dialect, lease.started),
    writeInstant(dialect, lease.heartbeat),
    writeInstant(dialect, lease.expires),
  ];
}

/** DeployLeaseRepository on TypeORM: table `deploys`, one row per app. */
export class TypeOrmDeployLeaseRepository implements DeployLeaseRepository {
  constructor(private readonly session: Session) {}

  /** Runs a writing statement that returns the rows it touched; true when it touched one. */
  private async touched(sql: Statement, params: readonly unknown[]): Promise<boolean> {
    const { dialect } = this.session;
    const rows = await this.session.write((manager) => new ManagerRunner(dialect, manager).rows<RawRow>(sql, params));
    return rows.length > 0;
  }

  insert(lease: DeployLease): Promise<boolean> {
    const [holder, ...rest] = fieldsOf(this.session.dialect, lease);
    return this.touched(INSERT_LEASE, [lease.app, holder, ...rest]);
  }

  async find(app: string): Promise<DeployLease | null> {
    const [raw] = await this.session.rows<RawRow>(FIND_LEASE, [app]);
    return raw === undefined ? null : leaseOf(raw);
  }

  replace(holder: string, lease: DeployLease): Promise<boolean> {
    return this.touched(REPLACE_LEASE, [...fieldsOf(this.session.dialect, lease), lease.app, holder]);
  }

  remove(app: string, holder: string): Promise<boolean> {
    return this.touched(REMOVE_LEASE, [app, holder]);
  }

  async list(): Promise<DeployLease[]> {
    return (await this.session.rows<RawRow>(ALL_LEASES, [])).map(leaseOf);
  }
}
