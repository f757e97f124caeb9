import { AlreadyExists, ReleaseVersionTaken } from '@svc/core';
import {
  InMemoryUnitOfWork,
  MEMORY_TRANSACTION_RETRIES,
  aBuild,
  aCertificate,
  aContainer,
  aKey,
  aRelease,
  aUser,
  anApp,
} from '@svc/core/testing';

const ALL = { offset: 0, limit: 100 };

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('InMemoryUnitOfWork transactions', () => {
  it('commits every write of work that resolves', async () => {
    const uow = new InMemoryUnitOfWork();

    const result = await uow.transaction(async (repos) => {
      await repos.users.create(aUser());
      await repos.apps.create(anApp());
      return 'done';
    });

    expect(result).toBe('done');
    expect(await uow.repositories.apps.findById('myapp')).not.toBeNull();
    expect(uow.stats).toEqual({ committed: 1, rolledBack: 0, attempts: 1 });
  });

  it('restores the state before the transaction when work rejects, and rethrows', async () => {
    const uow = new InMemoryUnitOfWork();
    await uow.repositories.users.create(aUser());
    await uow.repositories.apps.create(anApp({ structure: { web: 1 } }));
    await uow.repositories.builds.create(aBuild());
    const before = uow.snapshot();
    const failure = new Error('boom');

    const outcome = uow.transaction(async (repos) => {
      await repos.apps.update(anApp({ structure: { web: 5 } }));
      await repos.users.create(aUser({ username: 'bob' }));
      await repos.builds.create(aBuild({ app: 'other' }));
      await repos.apps.delete('myapp');
      throw failure;
    });

    await expect(outcome).rejects.toBe(failure);
    expect(uow.snapshot()).toEqual(before);
    expect(uow.stats.rolledBack).toBe(1);
  });

  it('hands back a user id taken by a rolled-back transaction', async () => {
    const uow = new InMemoryUnitOfWork();
    await uow.repositories.users.create(aUser({ username: 'alice' }));

    await expect(
      uow.transaction(async (repos) => {
        await repos.users.create(aUser({ username: 'bob' }));
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const carol = await uow.repositories.users.create(aUser({ username: 'carol' }));

    expect(carol.id).toBe(2);
  });

  it('keeps writes made outside a transaction while that transaction rolls back', async () => {
    const uow = new InMemoryUnitOfWork();
    const inside = deferred();
    const outcome = uow.transaction(async (repos) => {
      await repos.users.create(aUser({ username: 'bob' }));
      await inside.promise;
      throw new Error('boom');
    });

    await new Promise((r) => setImmediate(r));
    await uow.repositories.users.create(aUser({ username: 'alice' }));
    inside.resolve();

    await expect(outcome).rejects.toThrow('boom');
    expect(uow.snapshot().users.map((u) => u.username)).toEqual(['alice']);
  });

  it('hides uncommitted writes from outside readers, then commits them beside what others wrote meanwhile', async () => {
    const uow = new InMemoryUnitOfWork();
    const inside = deferred();
    const outcome = uow.transaction(async (repos) => {
      await repos.users.create(aUser({ username: 'bob' }));
      await inside.promise;
    });

    await new Promise((r) => setImmediate(r));
    expect(await uow.repositories.users.findByUsername('bob')).toBeNull();
    await uow.repositories.users.create(aUser({ username: 'alice' }));
    inside.resolve();
    await outcome;

    expect(uow.snapshot().users.map((u) => [u.id, u.username])).toEqual([
      [1, 'bob'],
      [2, 'alice'],
    ]);
  });

  it('runs transactions one at a time in call order', async () => {
    const uow = new InMemoryUnitOfWork();
    const events: string[] = [];
    const firstMayEnd = deferred();

    const first = uow.transaction(async () => {
      events.push('first start');
      await firstMayEnd.promise;
      events.push('first end');
    });
    const second = uow.transaction(async () => {
      events.push('second start');
    });
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['first start']);

    firstMayEnd.resolve();
    await Promise.all([first, second]);

    expect(events).toEqual(['first start', 'first end', 'second start']);
  });

  it('runs the next transaction after one that failed', async () => {
    const uow = new InMemoryUnitOfWork();

    const failed = uow.transaction(async () => {
      throw new Error('boom');
    });
    const next = uow.transaction(async () => 42);

    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe(42);
  });

  it('retries the whole work when it throws ReleaseVersionTaken, starting from a clean state each time', async () => {
    const uow = new InMemoryUnitOfWork();
    let attempts = 0;

    const result = await uow.transaction(async (repos) => {
      attempts++;
      await repos.users.create(aUser());
      if (attempts < 3) throw new ReleaseVersionTaken('myapp', 2);
      return attempts;
    });

    expect(result).toBe(3);
    expect(uow.snapshot().users).toHaveLength(1);
    expect(uow.stats).toEqual({ committed: 1, rolledBack: 2, attempts: 3 });
  });

  it(`gives up after ${MEMORY_TRANSACTION_RETRIES} retries and rethrows ReleaseVersionTaken`, async () => {
    const uow = new InMemoryUnitOfWork();
    let attempts = 0;

    const outcome = uow.transaction(async () => {
      attempts++;
      throw new ReleaseVersionTaken('myapp', 2);
    });

    await expect(outcome).rejects.toBeInstanceOf(ReleaseVersionTaken);
    expect(attempts).toBe(MEMORY_TRANSACTION_RETRIES + 1);
  });

  it('does not retry other errors', async () => {
    const uow = new InMemoryUnitOfWork();
    let attempts = 0;

    await expect(
      uow.transaction(async () => {
        attempts++;
        throw new AlreadyExists('id');
      }),
    ).rejects.toBeInstanceOf(AlreadyExists);
    expect(attempts).toBe(1);
  });

  it('retries a transaction that collided on a release version written outside it', async () => {
    const uow = new InMemoryUnitOfWork();
    await uow.repositories.releases.create(aRelease({ version: 1 }));
    let attempts = 0;

    const version = await uow.transaction(async (repos) => {
      attempts++;
      const next = ((await repos.releases.latest('myapp'))?.version ?? 0) + 1;
      // The first attempt loses a race against a writer outside the transaction.
      if (attempts === 1) await uow.repositories.releases.create(aRelease({ version: next }));
      await repos.releases.create(aRelease({ version: next }));
      return next;
    });

    expect(version).toBe(3);
    expect((await uow.repositories.releases.listForApp('myapp', ALL)).items.map((r) => r.version)).toEqual([3, 2, 1]);
  });

  it('refuses repositories of a transaction that has ended', async () => {
    const uow = new InMemoryUnitOfWork();
    let leaked: Parameters<Parameters<typeof uow.transaction>[0]>[0] | undefined;
    await uow.transaction(async (repos) => {
      leaked = repos;
    });

    await expect(leaked?.users.create(aUser())).rejects.toThrow(/transaction has ended/);
    await expect(leaked?.users.findByUsername('alice')).rejects.toThrow(/transaction has ended/);
  });
});

describe('InMemoryUnitOfWork failure injection', () => {
  it('failNextWrites makes exactly the next writes throw, then writes work again', async () => {
    const uow = new InMemoryUnitOfWork();
    uow.failNextWrites(2);

    await expect(uow.repositories.users.create(aUser({ username: 'a' }))).rejects.toThrow('Write failed (injected)');
    await expect(uow.repositories.apps.create(anApp())).rejects.toThrow('Write failed (injected)');
    await uow.repositories.users.create(aUser({ username: 'b' }));

    expect(uow.snapshot().users.map((u) => u.username)).toEqual(['b']);
    expect(uow.snapshot().apps).toEqual([]);
  });

  it('does not count reads as writes', async () => {
    const uow = new InMemoryUnitOfWork();
    uow.failNextWrites(1);

    await uow.repositories.users.findByUsername('alice');
    await uow.repositories.apps.listVisibleTo(null, ALL);

    await expect(uow.repositories.users.create(aUser())).rejects.toThrow('Write failed (injected)');
  });

  it('failNextWrites with an error throws that error, and a transaction hit by it changes nothing', async () => {
    const uow = new InMemoryUnitOfWork();
    await uow.repositories.users.create(aUser());
    const before = uow.snapshot();
    const error = new Error('disk full');

    const outcome = uow.transaction(async (repos) => {
      await repos.apps.create(anApp());
      uow.failNextWrites(1, error);
      await repos.releases.create(aRelease());
    });

    await expect(outcome).rejects.toBe(error);
    expect(uow.snapshot()).toEqual(before);
  });
});

describe('InMemoryUnitOfWork repositories', () => {
  it('gives users ids 1, 2, 3 and lists them by id', async () => {
    const { repositories: repos } = new InMemoryUnitOfWork();
    for (const username of ['zoe', 'adam', 'max']) await repos.users.create(aUser({ username, id: 99 }));

    const page = await repos.users.list({ offset: 1, limit: 5 });

    expect(page.count).toBe(3);
    expect(page.items.map((u) => [u.id, u.username])).toEqual([
      [2, 'adam'],
      [3, 'max'],
    ]);
  });

  it('returns copies: mutating what a repository returned changes nothing stored', async () => {
    const { repositories: repos } = new InMemoryUnitOfWork();
    const created = await repos.users.create(aUser());
    created.email = 'mallory@example.com';
    const app = anApp({ structure: { web: 1 } });
    await repos.apps.create(app);
    app.structure.web = 9;

    const found = await repos.apps.findById('myapp');
    (found as { structure: Record<string, number> }).structure.web = 7;
    (found as { created: Date }).created.setUTCFullYear(1999);

    expect((await repos.users.findByUsername('alice'))?.email).toBe('alice@example.com');
    expect(await repos.apps.findById('myapp')).toMatchObject({ structure: { web: 1 }, created: anApp().created });
  });

  it('lists builds newest first, later insertion first when created at the same instant', async () => {
    const { repositories: repos } = new InMemoryUnitOfWork();
    const t = (s: number): Date => new Date(Date.UTC(2026, 10, 21, 10, 0, s));
    await repos.builds.create(aBuild({ uuid: 'old', created: t(1) }));
    await repos.builds.create(aBuild({ uuid: 'same-1', created: t(5) }));
    await repos.builds.create(aBuild({ uuid: 'same-2', created: t(5) }));
    await repos.builds.create(aBuild({ uuid: 'new', created: t(9) }));

    const page = await repos.builds.listForApp('myapp', ALL);

    expect(page.items.map((b) => b.uuid)).toEqual(['new', 'same-2', 'same-1', 'old']);
  });

  it('filters containers: run containers only when asked, by type or with includeRun', async () => {
    const { repositories: repos } = new InMemoryUnitOfWork();
    const t = (s: number): Date => new Date(Date.UTC(2026, 10, 21, 10, 0, s));
    await repos.containers.create(aContainer({ uuid: 'run1', type: 'run', num: 1, created: t(0) }));
    await repos.containers.create(aContainer({ uuid: 'web2', type: 'web', num: 2, created: t(1) }));
    await repos.containers.create(aContainer({ uuid: 'web1', type: 'web', num: 1, created: t(1) }));
    await repos.containers.create(aContainer({ uuid: 'cmd1', type: 'cmd', num: 1, created: t(1) }));

    const ids = async (filter?: { type?: string; includeRun?: boolean }): Promise<string[]> =>
      (await repos.containers.listForApp('myapp', filter)).map((c) => c.uuid);

    expect(await ids()).toEqual(['cmd1', 'web1', 'web2']);
    expect(await ids({ includeRun: true })).toEqual(['run1', 'cmd1', 'web1', 'web2']);
    expect(await ids({ type: 'run' })).toEqual(['run1']);
    expect(await ids({ type: 'web' })).toEqual(['web1', 'web2']);
    expect(await repos.containers.pageForApp('myapp', {}, { offset: 2, limit: 1 })).toMatchObject({
      count: 3,
      items: [{ uuid: 'web2' }],
    });
  });

  it('names the duplicate field of keys: id for the same owner and id, public for the same material', async () => {
    const { repositories: repos } = new InMemoryUnitOfWork();
    const key = aKey({ id: 'laptop' });
    await repos.keys.create(key);

    await expect(repos.keys.create(aKey({ id: 'laptop' }))).rejects.toMatchObject({ field: 'id' });
    await expect(repos.keys.create({ ...key, id: 'desktop', owner: 'bob' })).rejects.toMatchObject({ field: 'public' });
    await repos.keys.create(aKey({ id: 'laptop', owner: 'bob' }));
  });

  it('deleting a user removes what belongs to them and nothing of others', async () => {
    const uow = new InMemoryUnitOfWork();
    const repos = uow.repositories;
    await repos.users.create(aUser({ username: 'alice' }));
    await repos.users.create(aUser({ username: 'bob' }));
    await repos.apps.create(anApp({ owner: 'alice' }));
    await repos.permissions.grant('myapp', 'bob');
    await repos.tokens.add({ hash: 'h:b', username: 'bob', created: new Date(), expires: null });
    await repos.keys.create(aKey({ owner: 'bob' }));
    await repos.certificates.create(aCertificate({ owner: 'bob' }));
    await repos.loginFailures.record('bob', new Date());

    await repos.users.delete('bob');

    const state = uow.snapshot();
    expect(state.users.map((u) => u.username)).toEqual(['alice']);
    expect([state.tokens, state.keys, state.certificates, state.permissions, state.loginFailures]).toEqual([[], [], [], [], []]);
    expect(state.apps).toHaveLength(1);
  });
});
