import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import { FAILED_LOGINS_JOURNALED_PER_MINUTE } from '@svc/core';
import { describeEachBackend, expectPage, signUp, useServer, type Session, type Store } from './support';
import type { EventJson } from './support/event-stream';

/** Every row of `idempotency_keys`, read straight from the server's database, as one text. */
async function idempotencyTable(store: Store): Promise<{ rows: number; text: string }> {
  if (store.databaseUrl === undefined) {
    const db = new BetterSqlite3(join(store.dataDir, 'controller.sqlite'), { readonly: true, timeout: 5000 });
    try {
      const rows = db.prepare('SELECT * FROM "idempotency_keys"').all();
      return { rows: rows.length, text: JSON.stringify(rows) };
    } finally {
      db.close();
    }
  }
  const client = new Client({ connectionString: store.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT * FROM "idempotency_keys"');
    return { rows: rows.length, text: JSON.stringify(rows) };
  } finally {
    await client.end();
  }
}

describeEachBackend('journal by app, sealed idempotent answers, failed logins in the journal', (backend) => {
  // TRUST_PROXY: the tests play clients at several addresses through X-Forwarded-For.
  const server = useServer(backend, { TRUST_PROXY: 'true' });
  let root: Session;
  let alice: Session;
  let mallory: Session;

  beforeAll(async () => {
    root = await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
    mallory = await signUp(server.api, 'mallory');
  });

  it('shows an app re-created under a deleted one\'s name none of the old events; an administrator still sees them', async () => {
    expect((await alice.api.post('/v1/apps/', { id: 'shop' })).status).toBe(201);
    expect((await alice.api.post('/v1/apps/shop/config/', { values: { DATABASE_URL: 'postgres://shop' } })).status).toBe(201);
    expect((await alice.api.post('/v1/apps/shop/domains/', { domain: 'shop.example.com' })).status).toBe(201);
    expect((await alice.api.delete('/v1/apps/shop/')).status).toBe(204);
    const old = expectPage<EventJson>(await root.api.get('/v1/events/?app=shop&page_size=100')).results;
    expect(old.map((e) => e.action)).toEqual(expect.arrayContaining(['app.create', 'config.update', 'domain.create', 'app.delete']));

    expect((await mallory.api.post('/v1/apps/', { id: 'shop' })).status).toBe(201);
    const oldIds = new Set(old.map((e) => e.uuid));
    const ofApp = expectPage<EventJson>(await mallory.api.get('/v1/apps/shop/events/?page_size=100'));
    expect(ofApp.results.map((e) => `${e.actor} ${e.action}`)).toEqual(['mallory app.create']);
    const byName = expectPage<EventJson>(await mallory.api.get('/v1/events/?app=shop&page_size=100'));
    expect(byName.results.map((e) => `${e.actor} ${e.action}`)).toEqual(['mallory app.create']);
    const all = expectPage<EventJson>(await mallory.api.get('/v1/events/?page_size=100'));
    expect(all.results.filter((e) => oldIds.has(e.uuid))).toEqual([]);
    expect(JSON.stringify(all.results)).not.toContain('shop.example.com');

    const admin = expectPage<EventJson>(await root.api.get('/v1/events/?app=shop&page_size=100'));
    expect(admin.results.filter((e) => oldIds.has(e.uuid))).toHaveLength(old.length);
    expect(admin.results.map((e) => `${e.actor} ${e.action}`)).toContain('mallory app.create');
  });

  it('keeps no new token or webhook secret readable in the idempotency table, and replays the same answers', async () => {
    const hookBody = { url: 'http://127.0.0.1:9/hook', events: ['config'] };
    const hookHeaders = { 'Idempotency-Key': 'hook-1' };
    const hook = await mallory.api.post<{ secret: string }>('/v1/apps/shop/webhooks/', hookBody, { headers: hookHeaders });
    expect(hook.status).toBe(201);
    const hookAgain = await mallory.api.post<{ secret: string }>('/v1/apps/shop/webhooks/', hookBody, { headers: hookHeaders });
    expect(hookAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(hookAgain.text).toBe(hook.text);

    const tokenHeaders = { 'Idempotency-Key': 'token-1' };
    const minted = await mallory.api.post<{ token: string }>('/v1/auth/tokens/', {}, { headers: tokenHeaders });
    expect(minted.status).toBe(200);
    const token = minted.body.token;
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    // Every other token of mallory's was revoked: the repeat comes with the new one.
    const again = await mallory.api.as(token).post<{ token: string }>('/v1/auth/tokens/', {}, { headers: tokenHeaders });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.token).toBe(token);
    expect((await mallory.api.as(token).get('/v1/apps/shop/')).status).toBe(200);

    const table = await idempotencyTable(server.current.store);
    expect(table.rows).toBeGreaterThanOrEqual(2);
    expect(table.text).not.toContain(token);
    expect(table.text).not.toContain(hook.body.secret);
    expect(table.text).not.toContain('whsec_');
  });

  it('journals failed logins of existing accounts only, at most the limit a minute from a flooding address', async () => {
    const flooder = { 'X-Forwarded-For': '203.0.113.50' };
    const statuses: number[] = [];
    // Ten of each: the throttling of one username from one address lets them all through (LOGIN_FAILURE_LIMIT).
    for (let i = 0; i < 30; i++) {
      const username = ['alice', 'root', 'nobody-here'][i % 3] as string;
      statuses.push((await server.api.post('/v1/auth/login/', { username, password: 'wrong' }, { token: null, headers: flooder })).status);
    }
    expect(statuses.every((s) => s === 400)).toBe(true);
    // Throttling is unchanged: the eleventh for one username from that address waits.
    expect((await server.api.post('/v1/auth/login/', { username: 'alice', password: 'wrong' }, { token: null, headers: flooder })).status).toBe(429);

    const failed = async (): Promise<EventJson[]> => expectPage<EventJson>(await root.api.get('/v1/events/?action=user.login_failed&page_size=100')).results;
    const journaled = (await failed()).filter((e) => e.address === '203.0.113.50');
    expect(journaled.length).toBeGreaterThan(0);
    expect(journaled.length).toBeLessThanOrEqual(FAILED_LOGINS_JOURNALED_PER_MINUTE);
    expect((await failed()).some((e) => e.target === 'nobody-here')).toBe(false);
    // Alice's own journal holds at most that many, whatever the flood.
    const alices = expectPage<EventJson>(await alice.api.get('/v1/events/?action=user.login_failed&page_size=100')).results;
    expect(alices.length).toBeLessThanOrEqual(FAILED_LOGINS_JOURNALED_PER_MINUTE);

    // Another address has its own count, and alice logs in from it.
    const elsewhere = { 'X-Forwarded-For': '198.51.100.9' };
    expect((await server.api.post('/v1/auth/login/', { username: 'alice', password: 'wrong' }, { token: null, headers: elsewhere })).status).toBe(400);
    expect((await failed())[0]).toMatchObject({ target: 'alice', address: '198.51.100.9' });
    expect((await server.api.post('/v1/auth/login/', { username: 'alice', password: alice.password }, { token: null, headers: elsewhere })).status).toBe(200);
  });
});
