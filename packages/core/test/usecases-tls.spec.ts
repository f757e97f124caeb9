import {
  DEFAULT_ACME_SETTINGS,
  IssuanceFailed,
  RenewCertificates,
  acmeNamesOf,
  issuanceDue,
  nextAttemptAfterFailure,
  parseTlsSettings,
  retryDelaySeconds,
  type CertificateAuthority,
  type IssuanceRequest,
  type IssuedCertificate,
  type TlsName,
} from '@svc/core';
import { InMemoryTlsStore, fakeCertificatePem, fakePrivateKeyPem } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const DAY = 24 * 3600 * 1000;

/** A certificate authority that answers from a script: issues with a 90-day certificate unless told a name fails. */
class ScriptedAuthority implements CertificateAuthority {
  readonly directory = 'https://acme.test/directory';
  readonly requested: string[] = [];
  readonly failing = new Map<string, IssuanceFailed>();
  accountKeys = 0;

  constructor(private readonly now: () => Date) {}

  async createAccountKey(): Promise<string> {
    this.accountKeys += 1;
    return `account-key-${this.accountKeys}`;
  }

  async issue(request: IssuanceRequest): Promise<IssuedCertificate> {
    this.requested.push(request.name);
    await request.challenges.publish(`token-${request.name}`, `auth-${request.name}`, request.name);
    const failure = this.failing.get(request.name);
    if (failure !== undefined) throw failure;
    const starts = this.now();
    return { certificate: `chain-for-${request.name}-${this.requested.length}`, key: `key-for-${request.name}`, starts, expires: new Date(starts.getTime() + 90 * DAY) };
  }
}

function acmeWorld(settings = { platformDomain: 'apps.example.net' }): { world: World; tls: InMemoryTlsStore; authority: ScriptedAuthority; renew: RenewCertificates } {
  const tls = new InMemoryTlsStore();
  let now: () => Date = () => new Date();
  const authority = new ScriptedAuthority(() => now());
  const world = new World(settings, null, {}, { tls, acme: { authority, settings: { ...DEFAULT_ACME_SETTINGS, retryBaseSeconds: 60, retryMaxSeconds: 3600 } } });
  now = () => world.clock.now();
  return { world, tls, authority, renew: new RenewCertificates(world.deps) };
}

describe('ACME rules', () => {
  it('lists custom domains and the platform name, the latter only without a wildcard and with a real platform domain', () => {
    expect(acmeNamesOf('shop', ['WWW.Shop.example'], 'apps.example.net', false)).toEqual(['shop.apps.example.net', 'www.shop.example']);
    expect(acmeNamesOf('shop', ['www.shop.example'], 'apps.example.net', true)).toEqual(['www.shop.example']);
    expect(acmeNamesOf('shop', [], 'localhost', false)).toEqual([]);
  });

  it('doubles the wait after each failure up to the maximum', () => {
    const settings = { retryBaseSeconds: 60, retryMaxSeconds: 600 };
    expect([0, 1, 2, 3, 4, 5, 40].map((n) => retryDelaySeconds(n, settings))).toEqual([0, 60, 120, 240, 480, 600, 600]);
  });

  it('waits for the server\'s Retry-After when it is later than the backoff', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const settings = { ...DEFAULT_ACME_SETTINGS, retryBaseSeconds: 60 };
    expect(nextAttemptAfterFailure(now, 1, null, settings).toISOString()).toBe('2026-01-01T00:01:00.000Z');
    expect(nextAttemptAfterFailure(now, 1, new Date('2026-01-01T03:00:00Z'), settings).toISOString()).toBe('2026-01-01T03:00:00.000Z');
    expect(nextAttemptAfterFailure(now, 3, new Date('2026-01-01T00:00:30Z'), settings).toISOString()).toBe('2026-01-01T00:04:00.000Z');
  });

  it('is due for a new name at once, for an issued one only within the renewal window', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const base: TlsName = { name: 'a.example', app: 'a', state: 'pending', certificate: null, sealedKey: null, expires: null, reason: null, failures: 0, nextAttempt: now, updated: now };
    expect(issuanceDue(base, now, DEFAULT_ACME_SETTINGS)).toBe(true);
    expect(issuanceDue({ ...base, nextAttempt: new Date(now.getTime() + 1000) }, now, DEFAULT_ACME_SETTINGS)).toBe(false);
    const issued = { ...base, state: 'issued' as const, certificate: 'c', sealedKey: 'k' };
    expect(issuanceDue({ ...issued, expires: new Date(now.getTime() + 31 * DAY) }, now, DEFAULT_ACME_SETTINGS)).toBe(false);
    expect(issuanceDue({ ...issued, expires: new Date(now.getTime() + 29 * DAY) }, now, DEFAULT_ACME_SETTINGS)).toBe(true);
  });

  it('reads the HTTPS redirect setting and refuses anything but a boolean', () => {
    expect(parseTlsSettings({ https_redirect: true })).toEqual({ httpsRedirect: true });
    expect(() => parseTlsSettings({ https_redirect: 'yes' })).toThrow('https_redirect');
    expect(() => parseTlsSettings({})).toThrow('required');
  });
});

describe('RenewCertificates', () => {
  it('issues the app name and each custom domain once, seals the keys and logs each', async () => {
    const { world, tls, authority, renew } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await world.useCases.addDomain.execute(alice, 'shop', { domain: 'www.shop.example' });

    const round = await renew.execute('p1');

    expect(round.issued).toEqual(['shop.apps.example.net', 'www.shop.example']);
    expect(authority.requested).toEqual(['shop.apps.example.net', 'www.shop.example']);
    const row = (await tls.find('www.shop.example')) as TlsName;
    expect(row).toMatchObject({ state: 'issued', app: 'shop', reason: null, failures: 0 });
    expect(world.secrets.open(row.sealedKey as string)).toBe('key-for-www.shop.example');
    expect(row.sealedKey).not.toBe('key-for-www.shop.example');
    expect(world.secrets.open([...tls.accounts.values()][0] as string)).toBe('account-key-1');
    expect(world.logs.messages('shop').some((line) => line.startsWith('certificate for www.shop.example issued'))).toBe(true);

    expect((await renew.execute('p1')).issued).toEqual([]);
    expect(authority.accountKeys).toBe(1);
  });

  it('renews once the certificate enters the renewal window, and not before', async () => {
    const { world, authority, renew, tls } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await renew.execute('p1');

    world.clock.advance(59 * DAY);
    expect((await renew.execute('p1')).issued).toEqual([]);
    world.clock.advance(2 * DAY);
    expect((await renew.execute('p1')).issued).toEqual(['shop.apps.example.net']);
    expect(authority.requested).toHaveLength(2);
    expect((await tls.find('shop.apps.example.net'))?.certificate).toBe('chain-for-shop.apps.example.net-2');
  });

  it('records a failure with its reason and backs off instead of retrying at once', async () => {
    const { world, authority, renew, tls } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await world.useCases.addDomain.execute(alice, 'shop', { domain: 'nowhere.example' });
    authority.failing.set('nowhere.example', new IssuanceFailed('DNS problem: NXDOMAIN looking up A for nowhere.example'));

    expect((await renew.execute('p1')).failed).toEqual(['nowhere.example']);
    expect(await tls.find('nowhere.example')).toMatchObject({ state: 'failed', failures: 1, reason: 'DNS problem: NXDOMAIN looking up A for nowhere.example' });
    expect((await renew.execute('p1')).failed).toEqual([]);
    world.clock.advance(61_000);
    expect((await renew.execute('p1')).failed).toEqual(['nowhere.example']);
    expect((await tls.find('nowhere.example'))?.nextAttempt.getTime()).toBe(world.clock.now().getTime() + 120_000);
    expect(authority.requested.filter((name) => name === 'nowhere.example')).toHaveLength(2);
  });

  it('respects the server\'s Retry-After', async () => {
    const { world, authority, renew, tls } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    const later = new Date(world.clock.now().getTime() + 5 * 3600 * 1000);
    authority.failing.set('shop.apps.example.net', new IssuanceFailed('too many certificates already issued', later));

    await renew.execute('p1');

    expect((await tls.find('shop.apps.example.net'))?.nextAttempt).toEqual(later);
  });

  it('leaves a name to the process holding its lease', async () => {
    const { world, authority, renew, tls } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await tls.insert({ name: 'shop.apps.example.net', app: 'shop', state: 'pending', certificate: null, sealedKey: null, expires: null, reason: null, failures: 0, nextAttempt: world.clock.now(), updated: world.clock.now() });
    await tls.acquire('shop.apps.example.net', 'other', new Date(world.clock.now().getTime() + 60_000), world.clock.now());

    expect((await renew.execute('p1')).issued).toEqual([]);
    expect(authority.requested).toEqual([]);
    world.clock.advance(61_000);
    expect((await renew.execute('p1')).issued).toEqual(['shop.apps.example.net']);
  });

  it('never requests a name an uploaded certificate serves: the upload wins', async () => {
    const { world, authority, renew } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await world.useCases.addDomain.execute(alice, 'shop', { domain: 'www.shop.example' });
    await world.useCases.addCertificate.execute(alice, { certificate: fakeCertificatePem({ cn: 'www.shop.example' }), key: fakePrivateKeyPem('www.shop.example') }, '1.7');

    await renew.execute('p1');

    expect(authority.requested).toEqual(['shop.apps.example.net']);
    const tls = await world.useCases.getAppTls.execute(alice, 'shop');
    expect(tls.names).toEqual([
      expect.objectContaining({ name: 'shop.apps.example.net', state: 'issued', source: 'acme' }),
      expect.objectContaining({ name: 'www.shop.example', state: 'issued', source: 'uploaded' }),
    ]);
  });

  it('requests nothing for app names when the operator serves a platform wildcard', async () => {
    const { world, authority, renew } = acmeWorld();
    const admin = await world.actor('admin', { admin: true });
    await world.app(admin, 'shop');
    await world.useCases.addCertificate.execute(admin, { certificate: fakeCertificatePem({ cn: '*.apps.example.net' }), key: fakePrivateKeyPem('*.apps.example.net') }, '1.7');

    await renew.execute('p1');

    expect(authority.requested).toEqual([]);
  });

  it('forgets a removed domain, and stops serving a certificate whose name moved to another app', async () => {
    const { world, renew, tls } = acmeWorld();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice, 'shop');
    await world.app(bob, 'bobs');
    await world.useCases.addDomain.execute(alice, 'shop', { domain: 'www.shop.example' });
    await renew.execute('p1');
    expect(await world.useCases.issuedCertificateFor.execute('www.shop.example')).not.toBeNull();

    await world.useCases.removeDomain.execute(alice, 'shop', 'www.shop.example');
    await world.useCases.addDomain.execute(bob, 'bobs', { domain: 'www.shop.example' });
    expect(await world.useCases.issuedCertificateFor.execute('www.shop.example')).toBeNull();

    const round = await renew.execute('p1');
    expect(round.removed).toEqual(['www.shop.example']);
    expect(round.issued).toEqual(['www.shop.example']);
    expect((await tls.find('www.shop.example'))?.app).toBe('bobs');
  });

  it('shows each name\'s state to those who may see the app, and hides the app from others', async () => {
    const { world, authority, renew } = acmeWorld();
    const alice = await world.actor('alice');
    const mallory = await world.actor('mallory');
    await world.app(alice, 'shop');
    await world.useCases.addDomain.execute(alice, 'shop', { domain: 'bad.example' });
    authority.failing.set('bad.example', new IssuanceFailed('no A record'));
    const before = await world.useCases.getAppTls.execute(alice, 'shop');
    expect(before.names.map((n) => [n.name, n.state])).toEqual([['bad.example', 'none'], ['shop.apps.example.net', 'none']]);

    await renew.execute('p1');

    const after = await world.useCases.getAppTls.execute(alice, 'shop');
    expect(after).toMatchObject({ app: 'shop', automatic: true, httpsRedirect: false });
    expect(after.names[0]).toMatchObject({ name: 'bad.example', state: 'failed', reason: 'no A record' });
    expect(after.names[1]).toMatchObject({ name: 'shop.apps.example.net', state: 'issued', expires: new Date(world.clock.now().getTime() + 90 * DAY) });
    expect((await rejectionOf(world.useCases.getAppTls.execute(mallory, 'shop'))).kind).toBe('hidden');
    expect((await rejectionOf(world.useCases.setAppTls.execute(mallory, 'shop', { https_redirect: true }))).kind).toBe('hidden');
  });

  it('redirects to HTTPS only when the app asked for it and the host has a certificate', async () => {
    const { world, renew } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await world.useCases.setAppTls.execute(alice, 'shop', { https_redirect: true });
    expect(await world.useCases.httpsRedirectFor.execute('shop', 'shop.apps.example.net')).toBe(false);

    await renew.execute('p1');

    expect(await world.useCases.httpsRedirectFor.execute('shop', 'shop.apps.example.net')).toBe(true);
    await world.useCases.setAppTls.execute(alice, 'shop', { https_redirect: false });
    expect(await world.useCases.httpsRedirectFor.execute('shop', 'shop.apps.example.net')).toBe(false);
  });

  it('forgets the HTTPS redirect of a deleted app, so a new app of the same name starts without it', async () => {
    const { world, tls } = acmeWorld();
    const alice = await world.actor('alice');
    await world.app(alice, 'shop');
    await world.useCases.setAppTls.execute(alice, 'shop', { https_redirect: true });

    await world.useCases.deleteApp.execute(alice, 'shop');

    expect(await tls.httpsRedirect('shop')).toBe(false);
  });
});
