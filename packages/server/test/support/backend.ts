import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Client } from 'pg';

/** Where a test server keeps its data. */
export interface Store {
  /** A fresh temporary directory (SQLite file, logs, generated secret). */
  dataDir: string;
  /** The PostgreSQL database of this store; undefined for SQLite. */
  databaseUrl?: string;
}

/** A database technology the e2e suites run against, with the stores it handed out. */
export interface Backend {
  readonly name: 'sqlite' | 'postgresql';
  /** A new, empty store: a fresh data directory and, for PostgreSQL, a fresh database. */
  newStore(): Promise<Store>;
  /** Removes every store this backend handed out (directories and databases). */
  cleanup(): Promise<void>;
  /**
   * Takes the store's database away under a running server, for readiness tests; only
   * PostgreSQL can (an open SQLite file cannot be taken from its process).
   */
  breakStore?(store: Store): Promise<void>;
}

/** The variable that points the second run at a PostgreSQL server. */
export const POSTGRES_URL_VARIABLE = 'TEST_DATABASE_URL';

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'svc-e2e-'));
}

/** SQLite: each store is a temporary directory. */
class SqliteBackend implements Backend {
  readonly name = 'sqlite' as const;
  private readonly dirs: string[] = [];

  async newStore(): Promise<Store> {
    const dataDir = await tempDir();
    this.dirs.push(dataDir);
    return { dataDir };
  }

  async cleanup(): Promise<void> {
    for (const dir of this.dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  }
}

/** PostgreSQL: each store is a temporary directory plus a database created on the given server. */
class PostgresBackend implements Backend {
  readonly name = 'postgresql' as const;
  private readonly dirs: string[] = [];
  private readonly databases: string[] = [];

  constructor(private readonly adminUrl: string) {}

  private async admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: this.adminUrl });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  async newStore(): Promise<Store> {
    const name = `svc_e2e_${randomBytes(6).toString('hex')}`;
    await this.admin((client) => client.query(`CREATE DATABASE "${name}"`));
    this.databases.push(name);
    const url = new URL(this.adminUrl);
    url.pathname = `/${name}`;
    const dataDir = await tempDir();
    this.dirs.push(dataDir);
    return { dataDir, databaseUrl: url.toString() };
  }

  async breakStore(store: Store): Promise<void> {
    const name = new URL(store.databaseUrl ?? '').pathname.slice(1);
    await this.admin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  }

  async cleanup(): Promise<void> {
    const names = this.databases.splice(0);
    if (names.length > 0) {
      await this.admin(async (client) => {
        // FORCE ends connections a failed test may have left open.
        for (const name of names) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      });
    }
    for (const dir of this.dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  }
}

/** The PostgreSQL server URL of the second run, or null when it is not configured. */
export function postgresUrl(): string | null {
  const value = process.env[POSTGRES_URL_VARIABLE]?.trim();
  return value ? value : null;
}

/** Whether this test file already said that its PostgreSQL run is skipped. */
let skipAnnounced = false;

/** The default time limit of e2e tests: real servers, real hashing, two cores. */
export const E2E_TIMEOUT_MS = 60_000;

/**
 * Declares the suite on SQLite alone, for a suite whose subject is not the database: what it
 * stores goes through stores whose contract suites run on both databases (`why` names them).
 * Its title says so, so that a report of the run shows where PostgreSQL is covered instead.
 * A second PostgreSQL run of such a suite costs a whole pass of its servers, builds or
 * timeouts and tests nothing the contract suites do not.
 */
export function describeOnSqlite(title: string, why: string, body: (backend: Backend) => void): void {
  jest.setTimeout(E2E_TIMEOUT_MS);
  describeOn(new SqliteBackend(), `${title} [sqlite; PostgreSQL: ${why}]`, body);
}

/** One suite on one backend, whose stores go at its end. */
function describeOn(backend: Backend, title: string, body: (backend: Backend) => void): void {
  describe(title, () => {
    afterAll(() => backend.cleanup());
    body(backend);
  });
}

/**
 * Declares the suite once per backend: always SQLite, and PostgreSQL when
 * TEST_DATABASE_URL is set. Without it the PostgreSQL run is declared skipped and one line
 * says so on standard output, so that it never goes missing silently.
 */
export function describeEachBackend(title: string, body: (backend: Backend) => void): void {
  jest.setTimeout(E2E_TIMEOUT_MS);
  const backends: Array<() => Backend> = [() => new SqliteBackend()];
  const pg = postgresUrl();
  if (pg !== null) backends.push(() => new PostgresBackend(pg));

  for (const make of backends) {
    const backend = make();
    describeOn(backend, `${title} [${backend.name}]`, body);
  }
  if (pg === null) {
    if (!skipAnnounced) {
      skipAnnounced = true;
      const file = basename(expect.getState().testPath ?? title);
      process.stdout.write(
        `PostgreSQL e2e run of ${file} skipped: ${POSTGRES_URL_VARIABLE} is not set ` +
          '(set it to a server URL such as postgres://postgres@127.0.0.1:5432/postgres to run it).\n',
      );
    }
    if (process.env.CI === 'true') {
      // CI must run every suite on both databases: a missing server fails the PostgreSQL run.
      describe(`${title} [postgresql]`, () => {
        it(`needs ${POSTGRES_URL_VARIABLE} under CI=true`, () => {
          throw new Error(`${POSTGRES_URL_VARIABLE} is not set: CI must provide a PostgreSQL server`);
        });
      });
    } else {
      describe.skip(`${title} [postgresql] (skipped: ${POSTGRES_URL_VARIABLE} is not set)`, () => {
        it(`needs ${POSTGRES_URL_VARIABLE}`, () => undefined);
      });
    }
  }
}
