import { Client, Pool } from 'pg';
import { reportingClient } from '../src/pg-client';
import { TEST_DATABASE_URL } from './support/postgres';

/*
 * A connection the pool has lent out, holding no query, whose server session ends (a restart,
 * DROP DATABASE … WITH (FORCE), pg_terminate_backend): pg's pool listens for its errors only
 * while it is idle, so without a listener of its own the error ends the process.
 */

async function terminate(url: string, pid: number): Promise<void> {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  } finally {
    await admin.end();
  }
}

if (TEST_DATABASE_URL === null) {
  if (process.env.CI === 'true') throw new Error('CI=true: the PostgreSQL connection tests need TEST_DATABASE_URL (a PostgreSQL server)');
  process.stdout.write('PostgreSQL connection tests were not run: set TEST_DATABASE_URL to run them.\n');
  describe.skip('pooled PostgreSQL connections (skipped: TEST_DATABASE_URL is not set)', () => {
    it('report the end of a lent connection instead of raising it', () => undefined);
  });
} else {
  const url = TEST_DATABASE_URL;
  describe('pooled PostgreSQL connections', () => {
    it("pg's pool lends a connection with no error listener of its own (why reportingClient exists)", async () => {
      const pool = new Pool({ connectionString: url, max: 1 });
      try {
        const lent = await pool.connect();
        expect(lent.listenerCount('error')).toBe(0);
        lent.release();
      } finally {
        await pool.end();
      }
    });

    it('report the end of a lent connection to the logger, raise nothing, and the pool serves on a new one', async () => {
      const warnings: string[] = [];
      const pool = new Pool({ connectionString: url, max: 1, Client: reportingClient({ info: () => undefined, warn: (m) => warnings.push(m) }) });
      pool.on('error', () => undefined);
      try {
        const lent = await pool.connect();
        try {
          const { rows } = await lent.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await terminate(url, Number(rows[0]?.pid));
          for (let i = 0; i < 100 && warnings.length === 0; i++) await new Promise((done) => setTimeout(done, 50));
        } finally {
          lent.release(true);
        }
        // The server's message, then (at times) the socket's end.
        expect(warnings[0]).toBe('A PostgreSQL connection failed and is dropped: terminating connection due to administrator command');
        for (const warning of warnings) expect(warning).toMatch(/^A PostgreSQL connection failed and is dropped: /);
        expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      } finally {
        await pool.end();
      }
    });
  });
}
