import { ValidationFailed } from '@svc/core';
import type { ContainerSpec, RunSpec } from '@svc/core';
import {
  FakeCertificateParser,
  FakePasswordHasher,
  FakePublicKeyParser,
  FakeScheduler,
  FakeSecretBox,
  FakeTokenGenerator,
  InMemoryLogStore,
  ManualClock,
  SeededRandom,
  SequentialIdGenerator,
  aCertificate,
  aKey,
  fakeCertificatePem,
  fakePrivateKeyPem,
  fakePublicKey,
} from '@svc/core/testing';

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
