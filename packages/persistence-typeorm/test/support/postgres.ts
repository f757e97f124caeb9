import { Client } from 'pg';

/** The server URL the PostgreSQL tests use, or null when they are not to run. */
export const TEST_DATABASE_URL: string | null =
  process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== '' ? process.env.TEST_DATABASE_URL : null;

/** A database created for one test file, and dropped by it. */
export interface ScratchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function onServer(serverUrl: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Creates an empty database with a random name on the server of `serverUrl`. */
export async function createScratchDatabase(serverUrl: string, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await onServer(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}
