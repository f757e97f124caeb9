import {
  DEFAULT_ACME_SETTINGS,
  GetAppTls,
  IssuanceFailed,
  RenewCertificates,
  nextTurn,
  overPendingCap,
  rateLimitScope,
  type AcmeSettings,
  type CertificateAuthority,
  type IssuanceRequest,
  type IssuedCertificate,
} from '@svc/core';
import { InMemoryTlsStore } from '@svc/core/testing';
import { World } from './support/world';

const DAY = 24 * 3600 * 1000;

/** A certificate authority whose orders for some names hang until the test ends them, as orders whose challenge never answers do. */
class StallingAuthority implements CertificateAuthority {
  readonly directory = 'https://acme.test/directory';
  readonly requested: string[] = [];
  readonly stalling = new Set<string>();
  readonly failing = new Map<string, IssuanceFailed>();
  private readonly stalled = new Map<string, Array<(failure: IssuanceFailed) => void>>();

  constructor(private readonly now: () => Date) {}

  async createAccountKey(): Promise<string> {
    return 'account-key';
  }

  async issue(request: IssuanceRequest): Promise<IssuedCertificate> {
    this.requested.push(request.name);
    if (this.stalling.has(request.name)) {
      await new Promise<never>((_, reject) => this.stalled.set(request.name, [...(this.stalled.get(request.name) ?? []), reject]));
    }
    const failure = this.failing.get(request.name);
    if (failure !== undefined) throw failure;
    const starts = this.now();
    return { certificate: `chain-for-${request.name}`, key: `key-for-${request.name}`, starts, expires: new Date(starts.getTime() + 90 * DAY) };
  }

  /** Ends the stalled order of `name` with a failure, as the server gives up on its challenge. */
  giveUp(name: string): void {
    const waiting = this.stalled.get(name) ?? [];
    this.stalled.delete(name);
    for (const reject of waiting) reject(new IssuanceFailed(`Timeout during connect (likely firewall problem) for ${name}`));
  }

  orders(name: string): number {
    return this.requested.filter((requested) => requested === name).length;
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function fairWorld(settings: Partial<AcmeSettings>): { world: World; tls: InMemoryTlsStore; authority: StallingAuthority; renew: RenewCertificates } {
  const tls = new InMemoryTlsStore();
  let now: () => Date = () => new Date();
  const authority = new StallingAuthority(() => now());
  const acme = { authority, settings: { ...DEFAULT_ACME_SETTINGS, retryBaseSeconds: 60, retryMaxSeconds: 3600, ...settings } };
  const world = new World({ platformDomain: 'localhost' }, null, {}, { tls, acme });
  now = () => world.clock.now();
  return { world, tls, authority, renew: new RenewCertificates(world.deps) };
}

async function tenant(world: World, owner: string, app: string, domains: string[]): Promise<void> {
  const actor = await world.actor(owner);
  if ((await world.deps.uow.repositories.apps.findById(app)) === null) await world.app(actor, app);
  for (const domain of domains) await world.useCases.addDomain.execute(actor, app, { domain });
}

const stalledNames = ['s1.mallory.example', 's2.mallory.example', 's3.mallory.example', 's4.mallory.example', 's5.mallory.example', 's6.mallory.example'];

describe('ACME turns (rules)', () => {
  it('gives the next slot to the owner with the fewest orders running, whatever the order of the queue', () => {
    const waiting = [...stalledNames.map((name) => ({ name, owner: 'mallory' })), { name: 'www.alice.example', owner: 'alice' }];
    expect(nextTurn(waiting, new Map([['mallory', 4]]), 'mallory')).toBe(6);
    expect(nextTurn(waiting, new Map([['alice', 1]]), 'alice')).toBe(0);
    expect(nextTurn([], new Map(), null)).toBeNull();
  });

  it('takes the owners in turn (round robin after the last one served) when they have as many orders running', () => {
    const waiting = [
      { name: 'a.example', owner: 'alice' },
      { name: 'b.example', owner: 'bob' },
      { name: 'c.example', owner: 'carol' },
    ];
    expect(nextTurn(waiting, new Map(), null)).toBe(0);
    expect(nextTurn(waiting, new Map(), 'alice')).toBe(1);
    expect(nextTurn(waiting, new Map(), 'bob')).toBe(2);
    expect(nextTurn(waiting, new Map(), 'carol')).toBe(0);
  });

  it('caps the names without a certificate per owner, first names first, renewals of issued names not counted', () => {
    const rows = [
      ...['d', 'c', 'b', 'a'].map((letter) => ({ name: `${letter}.mallory.example`, certificate: null, owner: 'mallory' })),
      { name: 'issued.mallory.example', certificate: 'pem', owner: 'mallory' },
      { name: 'www.alice.example', certificate: null, owner: 'alice' },
    ];
    expect([...overPendingCap(rows, 2)].sort()).toEqual(['c.mallory.example', 'd.mallory.example']);
  });

  it('tells an account rate limit from one of a name\'s own domain', () => {
    expect(rateLimitScope('Error creating new order :: too many new orders (300) from this account in the last 3h0m0s', 'www.shop.example')).toBe('account');
    expect(rateLimitScope('too many certificates (50) already issued for "shop.example" in the last 168h0m0s', 'www.shop.example')).toBe('name');
    expect(rateLimitScope('too many failed authorizations (5) for "www.shop.example" in the last 1h0m0s', 'www.shop.example')).toBe('name');
  });
});

describe('RenewCertificates between tenants', () => {
  it('gives another owner\'s new name the first slot that frees while one owner\'s six stalled names fill the others', async () => {
    const { world, authority, renew, tls } = fairWorld({ concurrency: 2 });
    for (const name of stalledNames) authority.stalling.add(name);
    await tenant(world, 'mallory', 'stalls', stalledNames);
    const first = await renew.start('p1');
    await settle();
    expect(authority.requested).toEqual(['s1.mallory.example', 's2.mallory.example']);

    await tenant(world, 'alice', 'shop', ['www.alice.example']);
    const second = await renew.start('p1');
    await settle();
    // Both slots are still taken: nothing more is ordered until one frees.
    expect(authority.requested).toHaveLength(2);
    authority.giveUp('s1.mallory.example');
    await settle();
    expect(authority.requested.slice(0, 3)).toEqual(['s1.mallory.example', 's2.mallory.example', 'www.alice.example']);

    // Alice's name was issued; mallory's other names get the free slot after her.
    await settle();
    expect(await tls.find('www.alice.example')).toMatchObject({ state: 'issued' });
    expect(authority.requested.slice(3)).toEqual(['s3.mallory.example']);
    for (const name of stalledNames) authority.giveUp(name);
    for (let i = 0; i < 10; i += 1) {
      await settle();
      for (const name of stalledNames) authority.giveUp(name);
    }
    // The first round ends with its own two orders; the second took over the names it had not started.
    expect((await first.settled).failed).toEqual(['s1.mallory.example', 's2.mallory.example']);
    const round = await second.settled;
    expect(round.issued).toEqual(['www.alice.example']);
    expect(stalledNames.every((name) => authority.orders(name) === 1)).toBe(true);
  });

  it('orders at most ACME_PENDING_PER_USER names of one owner; the others wait, say why and take no slot', async () => {
    const { world, authority, renew } = fairWorld({ concurrency: 4, pendingPerOwner: 2 });
    for (const name of stalledNames) authority.stalling.add(name);
    await tenant(world, 'mallory', 'stalls', stalledNames);
    await tenant(world, 'alice', 'shop', ['www.alice.example']);
    const started = await renew.start('p1');
    await settle();

    expect(started.waiting).toEqual(stalledNames.slice(2));
    expect([...authority.requested].sort()).toEqual(['s1.mallory.example', 's2.mallory.example', 'www.alice.example']);
    const mallory = await world.actor('mallory');
    const shown = await new GetAppTls(world.deps).execute(mallory, 'stalls');
    const waiting = shown.names.filter((name) => name.reason?.includes('ACME_PENDING_PER_USER'));
    expect(waiting.map((name) => name.name)).toEqual(stalledNames.slice(2));
    expect(waiting.every((name) => name.state === 'pending')).toBe(true);

    // One of the first two removed: the next name in line is ordered, and says so no more.
    authority.giveUp('s1.mallory.example');
    authority.giveUp('s2.mallory.example');
    await started.settled;
    await world.useCases.removeDomain.execute(mallory, 'stalls', 's1.mallory.example');
    world.clock.advance(3600_000);
    const next = await renew.start('p1');
    await settle();
    expect(next.waiting).toEqual(stalledNames.slice(3));
    expect(authority.orders('s3.mallory.example')).toBe(1);
    expect((await new GetAppTls(world.deps).execute(mallory, 'stalls')).names.find((name) => name.name === 's3.mallory.example')?.reason).toBeNull();
    for (const name of stalledNames) authority.giveUp(name);
    await next.settled;
  });

  it('keeps a name\'s failures and next attempt when its domain is removed and added again: the cycles order nothing', async () => {
    const { world, authority, renew, tls } = fairWorld({});
    const name = 'cycle.mallory.example';
    authority.failing.set(name, new IssuanceFailed(`DNS problem: NXDOMAIN looking up A for ${name}`));
    await tenant(world, 'mallory', 'stalls', [name]);
    await tenant(world, 'mallory', 'other', []);
    const mallory = await world.actor('mallory');
    expect((await renew.execute('p1')).failed).toEqual([name]);

    for (let cycle = 0; cycle < 5; cycle += 1) {
      await world.useCases.removeDomain.execute(mallory, cycle % 2 === 0 ? 'stalls' : 'other', name);
      expect((await renew.execute('p1')).removed).toEqual([name]);
      await world.useCases.addDomain.execute(mallory, cycle % 2 === 0 ? 'other' : 'stalls', { domain: name });
      expect((await renew.execute('p1')).added).toEqual([name]);
      world.clock.advance(5_000);
    }
    expect(authority.orders(name)).toBe(1);
    expect(await tls.find(name)).toMatchObject({ state: 'failed', failures: 1, reason: `DNS problem: NXDOMAIN looking up A for ${name}` });

    // Once the back-off ends it is tried again, and the next wait doubles.
    world.clock.advance(60_000);
    expect((await renew.execute('p1')).failed).toEqual([name]);
    expect((await tls.find(name))?.failures).toBe(2);
    expect((await tls.find(name))?.nextAttempt.getTime()).toBe(world.clock.now().getTime() + 120_000);
  });

  it('keeps the back-off for its owner only: another user adding the name after it was removed is not held back', async () => {
    const { world, authority, renew, tls } = fairWorld({});
    const name = 'contested.example';
    authority.failing.set(name, new IssuanceFailed(`DNS problem: NXDOMAIN looking up A for ${name}`));
    await tenant(world, 'mallory', 'stalls', [name]);
    expect((await renew.execute('p1')).failed).toEqual([name]);
    await world.useCases.removeDomain.execute(await world.actor('mallory'), 'stalls', name);
    await renew.execute('p1');

    authority.failing.delete(name);
    await tenant(world, 'alice', 'shop', [name]);
    expect((await renew.execute('p1')).issued).toEqual([name]);
    expect(await tls.find(name)).toMatchObject({ app: 'shop', state: 'issued', failures: 0 });
  });

  it('starts no second order for a name removed and added again while its order runs, and the new row gets the failure', async () => {
    const { world, authority, renew, tls } = fairWorld({});
    const name = 's1.mallory.example';
    authority.stalling.add(name);
    await tenant(world, 'mallory', 'stalls', [name]);
    const mallory = await world.actor('mallory');
    const running = await renew.start('p1');
    await settle();
    await world.useCases.removeDomain.execute(mallory, 'stalls', name);
    await renew.start('p1');
    await world.useCases.addDomain.execute(mallory, 'stalls', { domain: name });
    // Another controller process on the same database sees the new row too.
    const other = new RenewCertificates(world.deps);
    const elsewhere = await other.start('p2');
    await renew.start('p1');
    await settle();
    expect(authority.orders(name)).toBe(1);

    authority.giveUp(name);
    await running.settled;
    await elsewhere.settled;
    expect(await tls.find(name)).toMatchObject({ state: 'failed', failures: 1 });
    expect((await tls.find(name))?.nextAttempt.getTime()).toBeGreaterThan(world.clock.now().getTime());
  });

  it('pauses every process\'s new orders until the Retry-After of an account rate limit, instead of each name retrying', async () => {
    const { world, authority, renew, tls } = fairWorld({ concurrency: 1 });
    const until = new Date(world.clock.now().getTime() + 2 * 3600_000);
    authority.failing.set('a.alice.example', new IssuanceFailed('too many new orders (300) from this account in the last 3h0m0s', until, true));
    await tenant(world, 'alice', 'shop', ['a.alice.example']);
    await tenant(world, 'bob', 'bobs', ['b.bob.example', 'c.bob.example']);

    const round = await renew.execute('p1');
    expect(authority.requested).toEqual(['a.alice.example']);
    expect(round.paused).toEqual(['a.alice.example', 'b.bob.example', 'c.bob.example']);
    expect(tls.pausedUntil?.toISOString()).toBe(until.toISOString());
    // The name is not counted as failed: the account's limit is nobody's fault.
    expect(await tls.find('a.alice.example')).toMatchObject({ state: 'pending', failures: 0, nextAttempt: until });

    // Another process of the same database orders nothing either, round after round.
    const other = new RenewCertificates(world.deps);
    for (let i = 0; i < 3; i += 1) {
      world.clock.advance(30 * 60_000);
      await other.execute('p2');
      await renew.execute('p1');
    }
    expect(authority.requested).toEqual(['a.alice.example']);

    world.clock.advance(31 * 60_000);
    authority.failing.clear();
    expect((await renew.execute('p1')).issued).toEqual(['a.alice.example', 'b.bob.example', 'c.bob.example']);
  });

  it('puts off only the name when the rate limit is its own domain\'s', async () => {
    const { world, authority, renew, tls } = fairWorld({ concurrency: 1 });
    const until = new Date(world.clock.now().getTime() + 7 * DAY);
    authority.failing.set('www.mallory.example', new IssuanceFailed('too many certificates (5) already issued for this exact set of domains: www.mallory.example', until, true));
    await tenant(world, 'mallory', 'stalls', ['www.mallory.example']);
    await tenant(world, 'alice', 'shop', ['www.alice.example']);

    const round = await renew.execute('p1');
    expect(round.failed).toEqual(['www.mallory.example']);
    expect(round.issued).toEqual(['www.alice.example']);
    expect(tls.pausedUntil).toBeNull();
    expect((await tls.find('www.mallory.example'))?.nextAttempt.toISOString()).toBe(until.toISOString());
  });
});
