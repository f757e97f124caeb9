import {
  createUseCases,
  FAILED_LOGINS_JOURNALED_PER_MINUTE,
  journalsFailedLogin,
  type IdempotencyStore,
  type IdempotentRequest,
  type StoredResponse,
} from '@svc/core';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

/** An idempotency store in a map that shows what it holds, as a database would. */
class VisibleIdempotencyStore implements IdempotencyStore {
  readonly rows = new Map<string, IdempotentRequest>();

  async begin(request: IdempotentRequest): Promise<IdempotentRequest | null> {
    const existing = this.rows.get(`${request.username}\u0000${request.key}`);
    if (existing) return { ...existing };
    this.rows.set(`${request.username}\u0000${request.key}`, { ...request });
    return null;
  }

  async finish(username: string, key: string, response: StoredResponse): Promise<void> {
    const row = this.rows.get(`${username}\u0000${key}`);
    if (row) row.response = response;
  }

  async forget(username: string, key: string): Promise<void> {
    this.rows.delete(`${username}\u0000${key}`);
  }

  async prune(): Promise<number> {
    return 0;
  }
}

describe('an app re-created under a deleted one\'s name', () => {
  it('reads only its own events; an administrator still reads the deleted app\'s', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    const alice = await world.actor('alice');
    const mallory = await world.actor('mallory');
    await world.app(alice, 'shop');
    await world.useCases.setConfig.execute(alice, 'shop', { values: { DATABASE_URL: 'x' } });
    await world.useCases.deleteApp.execute(alice, 'shop');
    const old = world.uow.snapshot().events.filter((e) => e.app === 'shop').map((e) => e.uuid);
    expect(old.length).toBeGreaterThanOrEqual(4);

    await world.app(mallory, 'shop');
    const appEvents = await world.useCases.listAppEvents.execute(mallory, 'shop', {}, PAGE);
    expect(appEvents.items.map((e) => e.action)).toEqual(['app.create']);
    const journal = await world.useCases.listEvents.execute(mallory, { app: 'shop' }, PAGE);
    expect(journal.items.map((e) => e.action)).toEqual(['app.create']);
    expect(journal.items.some((e) => old.includes(e.uuid))).toBe(false);
    const everything = await world.useCases.listEvents.execute(mallory, {}, PAGE);
    expect(everything.items.some((e) => old.includes(e.uuid))).toBe(false);

    const admin = await world.useCases.listEvents.execute(root, { app: 'shop' }, PAGE);
    expect(admin.items.filter((e) => old.includes(e.uuid))).toHaveLength(old.length);
    expect(admin.items.map((e) => e.action)).toContain('app.delete');
    // The administrator's view of the app itself is the app under that name now.
    expect((await world.useCases.listAppEvents.execute(root, 'shop', {}, PAGE)).items.map((e) => e.action)).toEqual(['app.create']);
  });

  it('follows only its own events from a Last-Event-ID of the deleted app', async () => {
    const world = new World();
    let signal: () => void = () => undefined;
    const useCases = createUseCases({ ...world.deps, journalSignal: { subscribe: (l) => ((signal = l), () => undefined) } });
    const alice = await world.actor('alice');
    const mallory = await world.actor('mallory');
    await world.app(alice, 'shop');
    const first = world.uow.snapshot().events[0]!;
    await useCases.setConfig.execute(alice, 'shop', { values: { A: '1' } });
    await useCases.deleteApp.execute(alice, 'shop');
    await world.app(mallory, 'shop');
    const got: string[] = [];
    const followed = await useCases.followEvents.execute(mallory, 'shop', first.uuid, (events) => got.push(...events.map((e) => `${e.actor} ${e.action}`)));
    await new Promise((r) => setImmediate(r));
    await useCases.setConfig.execute(mallory, 'shop', { values: { B: '1' } });
    signal();
    await new Promise((r) => setTimeout(r, 10));
    followed.unsubscribe();
    // After that event: the new app's events only, none of the deleted one's.
    expect(got).toEqual(['mallory app.create', 'mallory config.update', 'mallory release.create']);
  });
});

describe('stored idempotent answers', () => {
  it('keep the body sealed, and a replay answers it opened', async () => {
    const world = new World();
    const store = new VisibleIdempotencyStore();
    const useCases = createUseCases({ ...world.deps, idempotency: store });
    const answer = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"token":"0123456789abcdef0123456789abcdef01234567"}' };
    expect(await useCases.startIdempotentRequest.execute('alice', 'k', 'f')).toEqual({ kind: 'first' });
    await useCases.finishIdempotentRequest.execute('alice', 'k', answer);
    const kept = [...store.rows.values()][0]!;
    expect(JSON.stringify(kept)).not.toContain('0123456789abcdef');
    expect(world.secrets.open(kept.response!.body)).toBe(answer.body);
    expect(await useCases.startIdempotentRequest.execute('alice', 'k', 'f')).toEqual({ kind: 'replay', response: answer });
  });

  it('forgets an answer it cannot open (kept in clear, or under another secret), and runs the request as the first', async () => {
    const world = new World();
    const store = new VisibleIdempotencyStore();
    const useCases = createUseCases({ ...world.deps, idempotency: store });
    store.rows.set('alice\u0000k', { username: 'alice', key: 'k', fingerprint: 'f', response: { status: 201, headers: {}, body: '{"token":"clear"}' }, created: world.clock.now() });
    expect(await useCases.startIdempotentRequest.execute('alice', 'k', 'f')).toEqual({ kind: 'first' });
    expect(store.rows.get('alice\u0000k')?.response).toBeNull();
    expect((await rejectionOf(useCases.startIdempotentRequest.execute('alice', 'k', 'f'))).code).toBe('IDEMPOTENCY.IN_PROGRESS');
  });
});

describe('failed logins in the journal', () => {
  const failedLogins = (world: World): string[] => world.uow.snapshot().events.filter((e) => e.action === 'user.login_failed').map((e) => `${e.target} ${e.address}`);
  const fail = async (world: World, username: string, address: string): Promise<void> => {
    const request = { id: 'r', address };
    await world.useCases.login.execute({ username, password: 'wrong' }, address, request).catch(() => undefined);
  };

  it('are journaled for an existing account only', async () => {
    const world = new World();
    await world.actor('alice', { password: 'right' });
    await fail(world, 'alice', '203.0.113.1');
    await fail(world, 'nobody', '203.0.113.1');
    expect(failedLogins(world)).toEqual(['alice 203.0.113.1']);
    // Counted for throttling all the same.
    expect(world.uow.snapshot().loginFailures.map((f) => f.username).sort()).toEqual(['alice', 'nobody']);
  });

  it('from one address, at most the limit a minute whatever the usernames; another address has its own', async () => {
    // Throttling would stop a flood for one username sooner: raised so that the journal's own bound shows.
    const world = new World({ loginFailureLimit: 1000, loginUsernameFailureLimit: 10_000 });
    await world.actor('alice', { password: 'right' });
    await world.actor('bob', { password: 'right' });
    for (let i = 0; i < 3 * FAILED_LOGINS_JOURNALED_PER_MINUTE; i++) {
      await fail(world, i % 3 === 0 ? 'nobody' : i % 3 === 1 ? 'alice' : 'bob', '203.0.113.7');
      world.clock.advance(100);
    }
    const flooded = failedLogins(world);
    expect(flooded.length).toBeLessThanOrEqual(FAILED_LOGINS_JOURNALED_PER_MINUTE);
    expect(flooded.length).toBeGreaterThan(0);
    expect(flooded.every((e) => e.endsWith('203.0.113.7'))).toBe(true);

    await fail(world, 'alice', '198.51.100.2');
    expect(failedLogins(world).slice(-1)).toEqual(['alice 198.51.100.2']);

    // A minute later the address may be journaled again, and the real user still logs in.
    world.clock.advance(60_000);
    await fail(world, 'bob', '203.0.113.7');
    expect(failedLogins(world).slice(-1)).toEqual(['bob 203.0.113.7']);
    expect((await world.useCases.login.execute({ username: 'alice', password: 'right' }, '203.0.113.7')).token).toMatch(/.+/);
  });

  it('the rule: an account, and at most the limit in the last minute', () => {
    expect(journalsFailedLogin(false, 1)).toBe(false);
    expect(journalsFailedLogin(true, 1)).toBe(true);
    expect(journalsFailedLogin(true, FAILED_LOGINS_JOURNALED_PER_MINUTE)).toBe(true);
    expect(journalsFailedLogin(true, FAILED_LOGINS_JOURNALED_PER_MINUTE + 1)).toBe(false);
  });
});
