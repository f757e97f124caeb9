import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DomainError } from '@svc/core';
import { createDatabase, type Database } from '../src';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from './support/postgres';
import { TcpProxy } from './support/tcp-proxy';

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 123);

function codeOf(error: unknown): string | null {
  return DomainError.is(error) ? error.code : null;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

if (TEST_DATABASE_URL === null) {
  if (process.env.CI === 'true') throw new Error('CI=true: the PostgreSQL outage tests need TEST_DATABASE_URL (a PostgreSQL server)');
  process.stdout.write('PostgreSQL outage tests were not run: set TEST_DATABASE_URL to run them.\n');
  describe.skip('PostgreSQL outage (skipped: TEST_DATABASE_URL is not set)', () => {
    it('reports Unavailable while the server cannot be reached and recovers without a restart', () => undefined);
  });
} else {
  const serverUrl = TEST_DATABASE_URL;

  describe('PostgreSQL outage', () => {
    let scratch: ScratchDatabase;
    let proxy: TcpProxy;
    let db: Database;
    let dataDir: string;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'svc-outage-'));
      scratch = await createScratchDatabase(serverUrl, 'svc_outage');
      const target = new URL(scratch.url);
      proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
      db = await createDatabase({ url: proxy.rewrite(scratch.url), dataDir, poolSize: 3, connectRetries: 0, pingTimeoutMs: 1000 });
      await db.migrate();
      await db.uow.repositories.users.create({
        username: 'alice',
        email: 'alice@example.com',
        firstName: '',
        lastName: '',
        passwordHash: 'x',
        isSuperuser: false,
        isStaff: false,
        isActive: true,
        lastLogin: null,
        dateJoined: new Date(T0),
      });
    });

    afterAll(async () => {
      await db?.close();
      await proxy?.cut();
      await scratch?.drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('answers Unavailable while the server is unreachable, then serves again once it is back, on the same handle', async () => {
      const logs = db.createLogStore();
      expect(await db.ping()).toBe(true);

      await proxy.cut();

      expect(await db.ping()).toBe(false);
      expect(codeOf(await rejection(db.uow.repositories.users.findByUsername('alice')))).toBe('DATABASE.UNAVAILABLE');
      expect(codeOf(await rejection(db.uow.transaction((repos) => repos.apps.findById('myapp'))))).toBe('DATABASE.UNAVAILABLE');
      expect(codeOf(await rejection(db.uow.repositories.loginFailures.record('alice', new Date(T0))))).toBe('DATABASE.UNAVAILABLE');
      expect(codeOf(await rejection(logs.append('myapp', [{ time: new Date(T0), source: 'svc[api]', message: 'x' }])))).toBe(
        'DATABASE.UNAVAILABLE',
      );
      expect(codeOf(await rejection(logs.tail('myapp', 10)))).toBe('DATABASE.UNAVAILABLE');

      await proxy.restore();

      expect(await eventually(() => db.ping(), 10_000)).toBe(true);
      expect((await db.uow.repositories.users.findByUsername('alice'))?.username).toBe('alice');
      await db.uow.transaction((repos) => repos.loginFailures.record('alice', new Date(T0)));
      await logs.append('myapp', [{ time: new Date(T0), source: 'svc[api]', message: 'back' }]);
      expect((await logs.tail('myapp', 1)).map((entry) => entry.message)).toEqual(['back']);
    });

    it('a transaction whose connection drops midway is reported Unavailable and leaves nothing behind', async () => {
      let inside!: () => void;
      const started = new Promise<void>((resolve) => {
        inside = resolve;
      });
      const pending = rejection(
        db.uow.transaction(async (repos) => {
          await repos.loginFailures.record('bob', new Date(T0));
          inside();
          await new Promise((resolve) => setTimeout(resolve, 300));
          await repos.loginFailures.record('bob', new Date(T0 + 1));
        }),
      );
      await started;
      await proxy.cut();

      expect(codeOf(await pending)).toBe('DATABASE.UNAVAILABLE');
      await proxy.restore();
      expect(await eventually(() => db.ping(), 10_000)).toBe(true);
      expect(await db.uow.repositories.loginFailures.since('bob', new Date(0))).toEqual([]);
    });
  });
}
