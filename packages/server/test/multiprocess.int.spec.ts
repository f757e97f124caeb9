import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from '../../persistence-typeorm/test/support/postgres';
import { startController, type ControllerProcess } from './processes/controller-process';
import { call, registerAndLogin } from './processes/http';
import { buildWorkspace } from './processes/workspace-build';
import { DATA_DIR_LOCK_FILE } from '../src/data-dir-lock';

const WRITES = 50;

if (TEST_DATABASE_URL === null) {
  if (process.env.CI === 'true') throw new Error('CI=true: the two-process test needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.stdout.write(
    'The two-process test was not run: it needs a PostgreSQL server; set TEST_DATABASE_URL ' +
      '(e.g. postgres://postgres@127.0.0.1:5432/postgres).\n',
  );
  describe.skip('two controller processes on one PostgreSQL database (skipped: TEST_DATABASE_URL is not set)', () => {
    it('numbers releases contiguously under concurrent config changes spread over both', () => undefined);
  });
} else {
  const serverUrl = TEST_DATABASE_URL;

  describe('two controller processes on one PostgreSQL database', () => {
    jest.setTimeout(120_000);
    let scratch: ScratchDatabase;
    let dataDirs: string[] = [];
    let controllers: ControllerProcess[] = [];
    let token: string;

    beforeAll(async () => {
      const build = await buildWorkspace();
      scratch = await createScratchDatabase(serverUrl, 'svc_multi');
      dataDirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'svc-multi-'))));
      // Started together: both migrate the empty database at once, and both generate a secret.
      controllers = await Promise.all(
        dataDirs.map((dataDir) =>
          startController(build, { env: { DATABASE_URL: scratch.url, DATA_DIR: dataDir, DB_POOL_SIZE: '10'} }),
        ),
      );
      token = await registerAndLogin((controllers[0] as ControllerProcess).url, 'alice');
    });

    afterAll(async () => {
      await Promise.all(controllers.map((controller) => controller.stop()));
      await scratch?.drop();
      await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
    });

    const urlOf = (i: number): string => (controllers[i % controllers.length] as ControllerProcess).url;

    it(`${WRITES} concurrent config changes over both processes make releases v1..v${WRITES + 1}, contiguous, each with its config, none lost`, async () => {
      const created = await call(urlOf(0), 'POST', '/v1/apps', token, { id: 'shared-app' });
      expect(created.status).toBe(201);

      const started = Date.now();
      const replies = await Promise.all(
        Array.from({ length: WRITES }, (_, i) =>
          call(urlOf(i), 'POST', '/v1/apps/shared-app/config', token, { values: { [`KEY_${i}`]: `value-${i}` } }),
        ),
      );
      const elapsedMs = Date.now() - started;

      expect(replies.map((reply) => reply.status)).toEqual(Array(WRITES).fill(201));
      const acknowledged = replies.map((reply) => Number(reply.release)).sort((a, b) => a - b);
      expect(acknowledged).toEqual(Array.from({ length: WRITES }, (_, i) => i + 2));

      // Every process sees the same history: v1 (creation) and one release per acknowledged write.
      for (const i of [0, 1]) {
        const listed = await call(urlOf(i), 'GET', '/v1/apps/shared-app/releases?page_size=1000', token);
        const versions = (listed.body as { results: Array<{ version: number }> }).results.map((r) => r.version).sort((a, b) => a - b);
        expect(versions).toEqual(Array.from({ length: WRITES + 1 }, (_, n) => n + 1));
      }
      // Config changes merged one after another: the current config has every key, none lost to a race.
      const config = await call(urlOf(1), 'GET', '/v1/apps/shared-app/config', token);
      const values = (config.body as { values: Record<string, string> }).values;
      for (let i = 0; i < WRITES; i++) expect(values[`KEY_${i}`]).toBe(`value-${i}`);
      expect(values.SVC_RELEASE).toBe(`v${WRITES + 1}`);

      const db = new Client({ connectionString: scratch.url });
      await db.connect();
      try {
        const orphans = await db.query(
          `SELECT r.version FROM releases r LEFT JOIN configs c ON c.uuid = r.config WHERE r.app = 'shared-app' AND c.uuid IS NULL`,
        );
        const perRelease = await db.query<{ version: number; keys: number }>(
          `SELECT r.version, (SELECT count(*) FROM json_object_keys(c."values"))::int AS keys
           FROM releases r JOIN configs c ON c.uuid = r.config WHERE r.app = 'shared-app' ORDER BY r.version`,
        );
        expect(orphans.rows).toEqual([]);
        // Release vN carries the config after N-1 merged changes: N-1 keys.
        expect(perRelease.rows).toEqual(Array.from({ length: WRITES + 1 }, (_, n) => ({ version: n + 1, keys: n })));
      } finally {
        await db.end();
      }

      process.stdout.write(
        `Two controller processes, one PostgreSQL database: ${WRITES} concurrent config changes acknowledged in ${elapsedMs} ms; ` +
          `releases v1..v${WRITES + 1} contiguous, no duplicate, every release with its config.\n`,
      );
    });

    it('concurrent builds and scales of one app over both processes take turns: contiguous versions, the last release running, no lease left', async () => {
      expect((await call(urlOf(0), 'POST', '/v1/apps', token, { id: 'deployed-app' })).status).toBe(201);
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          i % 4 === 3
            ? call(urlOf(i), 'POST', '/v1/apps/deployed-app/scale', token, { web: (i % 3) + 1 })
            : call(urlOf(i), 'POST', '/v1/apps/deployed-app/builds', token, { image: `example/app:v${i}`, procfile: { web: 'serve' } }),
        ),
      );

      expect(replies.map((reply) => reply.status).sort()).toEqual([...Array(9).fill(201), ...Array(3).fill(204)]);
      const releases = await call(urlOf(1), 'GET', '/v1/apps/deployed-app/releases?page_size=100', token);
      const versions = (releases.body as { results: Array<{ version: number }> }).results.map((r) => r.version).sort((a, b) => a - b);
      expect(versions).toEqual(Array.from({ length: 10 }, (_, n) => n + 1));
      const containers = await call(urlOf(0), 'GET', '/v1/apps/deployed-app/containers', token);
      const listed = (containers.body as { results: Array<{ release: string; type: string; num: number }> }).results;
      const app = await call(urlOf(0), 'GET', '/v1/apps/deployed-app', token);
      const webs = (app.body as { structure: Record<string, number> }).structure.web ?? 0;
      // Exactly the structure's containers, all of the last release, numbered 1..n.
      expect(listed.map((c) => `${c.type}.${c.num}`).sort()).toEqual(Array.from({ length: webs }, (_, n) => `web.${n + 1}`));
      expect(new Set(listed.map((c) => c.release))).toEqual(new Set(webs > 0 ? ['v10'] : []));
      const db = new Client({ connectionString: scratch.url });
      await db.connect();
      try {
        expect((await db.query('SELECT app FROM deploys')).rows).toEqual([]);
      } finally {
        await db.end();
      }
    });

    it('both processes read the same app log from the database', async () => {
      const fromFirst = await call(urlOf(0), 'GET', '/v1/apps/shared-app/logs?log_lines=1000', token);
      const fromSecond = await call(urlOf(1), 'GET', '/v1/apps/shared-app/logs?log_lines=1000', token);
      const lines = String(fromFirst.body).split('\n').filter((line) => line !== '');

      expect(fromFirst.status).toBe(200);
      expect(fromSecond.body).toEqual(fromFirst.body);
      expect(lines).toHaveLength(WRITES + 1);
      expect(lines[0]).toMatch(/svc\[api\]: alice created initial release$/);
      expect(lines.filter((line) => / svc\[api\]: alice added KEY_\d+$/.test(line))).toHaveLength(WRITES);
    });

    it('keeps nothing a second process needs on local disk: one generated secret in the database, logs in the database', async () => {
      const db = new Client({ connectionString: scratch.url });
      await db.connect();
      try {
        const secrets = await db.query<{ name: string }>('SELECT name FROM controller_secrets');
        expect(secrets.rows).toEqual([{ name: 'secret_key' }]);
      } finally {
        await db.end();
      }
      // Only the lock that keeps a second controller off each process's data directory.
      for (const dir of dataDirs) expect(await readdir(dir)).toEqual([DATA_DIR_LOCK_FILE]);
      const ready = await Promise.all([0, 1].map((i) => call(urlOf(i), 'GET', '/readyz', null)));
      expect(ready.map((reply) => reply.status)).toEqual([200, 200]);
    });
  });
}
