import { AlreadyExists, ReleaseVersionTaken, ValidationFailed } from '@svc/core';
import type { ContainerSpec, RunSpec } from '@svc/core';
import {
  FakeCertificateParser,
  FakePasswordHasher,
  FakePublicKeyParser,
  FakeScheduler,
  FakeSecretBox,
  FakeTokenGenerator,
  InMemoryLogStore,
  InMemoryUnitOfWork,
  MEMORY_TRANSACTION_RETRIES,
  ManualClock,
  SeededRandom,
  SequentialIdGenerator,
  aBuild,
  aCertificate,
  aContainer,
  aKey,
  aRelease,
  aUser,
  anApp,
  fakeCertificatePem,
  fakePrivateKeyPem,
  fakePublicKey,
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

describe('FakeScheduler', () => {
  const spec = (type: string, num: number): ContainerSpec => ({
    id: `${type}-${num}`,
    app: 'myapp',
    type,
    num,
    release: 2,
    image: 'example/myapp:v2',
    command: null,
    workdir: null,
    env: { SVC_APP: 'myapp' },
    memory: null,
    cpu: null,
  });
  const runSpec: RunSpec = {
    app: 'myapp',
    release: 2,
    image: 'example/myapp:v2',
    workdir: null,
    command: 'ls',
    env: {},
    timeoutSeconds: 10,
    outputLimitBytes: 1024,
  };

  it('records started containers as up and forgets stopped ones', async () => {
    const scheduler = new FakeScheduler();

    expect(await scheduler.start(spec('web', 1))).toBe('up');
    await scheduler.start(spec('web', 2));
    await scheduler.stop('web-1');
    await scheduler.stop('unknown');

    expect(scheduler.running().map((c) => [c.id, c.state, c.spec.num])).toEqual([['web-2', 'up', 2]]);
    expect(await scheduler.states(['web-1', 'web-2'])).toEqual(new Map([['web-2', 'up']]));
    expect(scheduler.stopped()).toEqual(['web-1', 'unknown']);
  });

  it('failStarts(n) fails exactly the next n starts, which start nothing', async () => {
    const scheduler = new FakeScheduler();
    scheduler.failStarts(2);

    await expect(scheduler.start(spec('web', 1))).rejects.toThrow(/injected/);
    await expect(scheduler.start(spec('web', 2))).rejects.toThrow(/injected/);
    await scheduler.start(spec('web', 3));

    expect(scheduler.running().map((c) => c.id)).toEqual(['web-3']);
    expect(scheduler.calls.map((c) => c.method === 'start' && c.failed)).toEqual([true, true, false]);
    expect(scheduler.started().map((s) => s.id)).toEqual(['web-3']);
  });

  it('failStartOf fails every start that matches until failures are cleared', async () => {
    const scheduler = new FakeScheduler();
    const error = new Error('no capacity');
    scheduler.failStartOf((s) => s.type === 'worker', error);

    await expect(scheduler.start(spec('worker', 1))).rejects.toBe(error);
    await scheduler.start(spec('web', 1));
    await expect(scheduler.start(spec('worker', 2))).rejects.toBe(error);
    scheduler.clearFailures();
    await scheduler.start(spec('worker', 3));

    expect(scheduler.running().map((c) => c.id)).toEqual(['web-1', 'worker-3']);
  });

  it('failStops(n) fails the next n stops and keeps those containers', async () => {
    const scheduler = new FakeScheduler();
    await scheduler.start(spec('web', 1));
    scheduler.failStops(1);

    await expect(scheduler.stop('web-1')).rejects.toThrow(/injected/);
    expect(scheduler.running()).toHaveLength(1);
    await scheduler.stop('web-1');
    expect(scheduler.running()).toHaveLength(0);
  });

  it('run returns the configured result, records the call, and fails on demand', async () => {
    const scheduler = new FakeScheduler();
    expect(await scheduler.run(runSpec)).toEqual({ exitCode: 0, output: '' });

    scheduler.setRunResult((s) => ({ exitCode: 3, output: `ran ${s.command}` }));
    expect(await scheduler.run(runSpec)).toEqual({ exitCode: 3, output: 'ran ls' });
    scheduler.failRuns(1);
    await expect(scheduler.run(runSpec)).rejects.toThrow(/injected/);

    expect(scheduler.runs()).toHaveLength(3);
    expect(scheduler.running()).toEqual([]);
  });

  it('reports a state set by the test, e.g. a crash', async () => {
    const scheduler = new FakeScheduler();
    await scheduler.start(spec('web', 1));

    scheduler.setState('web-1', 'crashed');

    expect((await scheduler.states(['web-1'])).get('web-1')).toBe('crashed');
  });

  it('keeps its own copy of a spec', async () => {
    const scheduler = new FakeScheduler();
    const s = spec('web', 1);
    await scheduler.start(s);

    s.env.SVC_APP = 'changed';

    expect(scheduler.running()[0]?.spec.env.SVC_APP).toBe('myapp');
  });
});

describe('InMemoryLogStore', () => {
  const entry = (n: number) => ({ time: new Date(Date.UTC(2026, 10, 21, 10, 0, n)), source: 'svc[api]', message: `line ${n}` });

  it('tail returns the last n entries oldest first', async () => {
    const logs = new InMemoryLogStore();
    await logs.append('myapp', [entry(1), entry(2)]);
    await logs.append('myapp', [entry(3), entry(4)]);

    expect((await logs.tail('myapp', 3)).map((e) => e.message)).toEqual(['line 2', 'line 3', 'line 4']);
    expect(await logs.tail('myapp', 10)).toHaveLength(4);
    expect(await logs.tail('myapp', 0)).toEqual([]);
    expect(await logs.tail('unknown', 5)).toEqual([]);
  });

  it('keeps apps apart and forgets a removed app', async () => {
    const logs = new InMemoryLogStore();
    await logs.append('myapp', [entry(1)]);
    await logs.append('other', [entry(2)]);

    await logs.remove('myapp');

    expect(await logs.tail('myapp', 5)).toEqual([]);
    expect(logs.messages('other')).toEqual(['line 2']);
  });

  it('drops the oldest entries beyond its cap', async () => {
    const logs = new InMemoryLogStore({ maxEntriesPerApp: 2 });

    await logs.append('myapp', [entry(1), entry(2), entry(3)]);

    expect(logs.messages('myapp')).toEqual(['line 2', 'line 3']);
  });
});

describe('deterministic services', () => {
  it('ManualClock starts at the fixed instant and moves only when told', () => {
    const clock = new ManualClock();
    const first = clock.now();
    first.setUTCFullYear(2000);

    expect(clock.now().toISOString()).toBe('2026-11-21T10:00:00.000Z');
    clock.advanceSeconds(90);
    expect(clock.now().toISOString()).toBe('2026-11-21T10:01:30.000Z');
    clock.set('2027-01-01T00:00:00.000Z');
    expect(clock.now().toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  it('SequentialIdGenerator issues distinct UUID-shaped ids in order', () => {
    const ids = new SequentialIdGenerator();
    const [a, b] = [ids.uuid(), ids.uuid()];

    expect(a).toBe('00000000-0000-4000-8000-000000000001');
    expect(b).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b).not.toBe(a);
  });

  it('SeededRandom repeats its sequence for the same seed and serves forced values first', () => {
    const draw = (r: SeededRandom): number[] => Array.from({ length: 20 }, () => r.int(10));
    const forced = new SeededRandom(7);
    forced.force(3, 3);

    expect(draw(new SeededRandom(7))).toEqual(draw(new SeededRandom(7)));
    expect(draw(new SeededRandom(7))).not.toEqual(draw(new SeededRandom(8)));
    expect(draw(new SeededRandom(1)).every((n) => Number.isInteger(n) && n >= 0 && n < 10)).toBe(true);
    expect([forced.int(10), forced.int(10)]).toEqual([3, 3]);
    expect(() => forced.int(0)).toThrow(RangeError);
  });

  it('FakePasswordHasher, FakeTokenGenerator and FakeSecretBox are reversible and recognisable', async () => {
    const hasher = new FakePasswordHasher();
    const tokens = new FakeTokenGenerator();
    const box = new FakeSecretBox();
    const secret = '-----BEGIN KEY-----\nhéllo ✓ 🔑\n';

    expect(await hasher.hash('pw')).toBe('fake:pw');
    expect(await hasher.verify('pw', 'fake:pw')).toBe(true);
    expect(await hasher.verify('PW', 'fake:pw')).toBe(false);
    expect([tokens.generate(), tokens.generate()]).toEqual([`${'0'.repeat(39)}1`, `${'0'.repeat(39)}2`]);
    expect(tokens.last()).toMatch(/^[0-9a-f]{40}$/);
    expect(tokens.hash('abc')).toBe('h:abc');
    expect(box.seal(secret)).toMatch(/^sealed:[A-Za-z0-9+/=]+$/);
    expect(box.seal(secret)).not.toContain('KEY');
    expect(box.open(box.seal(secret))).toBe(secret);
    expect(() => box.open(secret)).toThrow();
  });
});

describe('FakePublicKeyParser', () => {
  const parser = new FakePublicKeyParser();

  it('accepts an ed25519 line, keeps the comment and fingerprints the material', () => {
    const line = fakePublicKey('alice', 'alice@laptop');

    const parsed = parser.parse(`  ${line.replace(' ', '   ')}\n`);

    expect(parsed.type).toBe('ssh-ed25519');
    expect(parsed.normalized).toBe(line);
    expect(parsed.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(parser.parse(line.replace('alice@laptop', 'other')).fingerprint).toBe(parsed.fingerprint);
    expect(parser.parse(fakePublicKey('bob')).fingerprint).not.toBe(parsed.fingerprint);
  });

  it.each([
    ['empty', ''],
    ['dsa', 'ssh-dss AAAAB3NzaC1kc3MAAACBAP== me'],
    ['bad base64', 'ssh-ed25519 not*base64'],
    ['missing material', 'ssh-ed25519'],
    ['two lines', `${fakePublicKey('a')}\n${fakePublicKey('b')}`],
  ])('rejects %s on field public', (_name, text) => {
    expect(() => parser.parse(text)).toThrow(ValidationFailed);
    expect(() => parser.parse(text)).toThrow(expect.objectContaining({ fields: { public: [expect.any(String)] } }));
  });

  it('aKey builds keys whose fingerprint the parser agrees with', () => {
    const key = aKey();

    expect(parser.parse(key.public).fingerprint).toBe(key.fingerprint);
    expect(aKey().fingerprint).not.toBe(key.fingerprint);
  });
});

describe('FakeCertificateParser', () => {
  const parser = new FakeCertificateParser();

  it('reads the fields of the fake format and re-encodes it', () => {
    const pem = fakeCertificatePem({ cn: 'api.example.com', san: ['api.example.com', 'example.com'], expires: '2028-01-01T00:00:00Z' });

    const parsed = parser.parse(pem, fakePrivateKeyPem('api.example.com'));

    expect(parsed).toMatchObject({
      commonName: 'api.example.com',
      san: ['api.example.com', 'example.com'],
      issuer: 'CN=Fake CA',
      expires: new Date('2028-01-01T00:00:00Z'),
      pem,
    });
    expect(parsed.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it('accepts bare field lines and matches the key to the first SAN when there is no CN', () => {
    const parsed = parser.parse('SAN=a.example.com,b.example.com\nEXPIRES=2028-01-01T00:00:00Z\n', 'KEY-FOR:a.example.com');

    expect(parsed.commonName).toBeNull();
    expect(parsed.san).toEqual(['a.example.com', 'b.example.com']);
  });

  it.each([
    ['garbage', 'hello', 'certificate'],
    ['no expiry', 'CN=x.example.com', 'certificate'],
    ['unknown field', 'CN=x.example.com\nEXPIRES=2028-01-01T00:00:00Z\nFOO=1', 'certificate'],
    ['bad date', 'CN=x.example.com\nEXPIRES=soon', 'certificate'],
  ])('rejects a certificate with %s on field certificate', (_name, pem, field) => {
    expect(() => parser.parse(pem, 'KEY-FOR:x.example.com')).toThrow(
      expect.objectContaining({ fields: { [field]: [expect.any(String)] } }),
    );
  });

  it('rejects an unreadable key and a key for another subject on field key', () => {
    const pem = fakeCertificatePem({ cn: 'x.example.com' });

    expect(() => parser.parse(pem, 'garbage')).toThrow(expect.objectContaining({ fields: { key: [expect.any(String)] } }));
    expect(() => parser.parse(pem, fakePrivateKeyPem('y.example.com'))).toThrow(
      expect.objectContaining({ fields: { key: ['The private key does not match the certificate.'] } }),
    );
  });

  it('aCertificate builds certificates the parser reads back, with the key sealed by FakeSecretBox', () => {
    const cert = aCertificate({ commonName: 'shop.example.com' });

    const parsed = parser.parse(cert.certificate, new FakeSecretBox().open(cert.sealedKey));

    expect(parsed).toMatchObject({ commonName: 'shop.example.com', san: cert.san, fingerprint: cert.fingerprint });
  });
});
