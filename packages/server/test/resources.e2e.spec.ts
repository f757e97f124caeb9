import {
  APP_TIMESTAMP,
  UUID,
  describeEachBackend,
  expectDetail,
  expectFieldErrors,
  expectNoContent,
  expectNotFound,
  expectPage,
  expectUnique,
  signUp,
  useServer,
  type CertificateItemJson,
  type CertificateJson,
  type DomainJson,
  type KeyJson,
  type Session,
} from './support';
import { ecdsaPair, ed25519Pair, fixture, rsaPair } from './support/certs';
import { dsaPublicKey, ecdsaPublicKey, ed25519PublicKey, rsaPublicKey } from './support/ssh-keys';

const KEY_FIELDS = ['created', 'fingerprint', 'id', 'owner', 'public', 'updated', 'uuid'];
const CERT_FIELDS = ['common_name', 'created', 'expires', 'fingerprint', 'id', 'issuer', 'owner', 'san', 'starts', 'updated'];

describeEachBackend('domains, keys and certificates', (backend) => {
  const server = useServer(backend);
  let admin: Session;
  let alice: Session;
  let bob: Session;

  beforeAll(async () => {
    admin = await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
    bob = await signUp(server.api, 'bob');
    expect((await alice.api.post('/v1/apps/', { id: 'web' })).status).toBe(201);
    expect((await bob.api.post('/v1/apps/', { id: 'other' })).status).toBe(201);
  });

  describe('domains', () => {
    it('starts with an empty list', async () => {
      const page = expectPage<DomainJson>(await alice.api.get('/v1/apps/web/domains/'));
      expect(page).toEqual({ count: 0, next: null, previous: null, results: [] });
    });

    it('adds a domain in lower case without its trailing dot: 201 Domain', async () => {
      const res = await alice.api.post<DomainJson>('/v1/apps/web/domains/', { domain: 'WWW.Example.COM.' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ app: 'web', domain: 'www.example.com', owner: 'alice' });
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining(['app', 'domain', 'owner', 'created', 'updated']));
      expect(res.body.created).toMatch(APP_TIMESTAMP);
      const page = expectPage<DomainJson>(await alice.api.get('/v1/apps/web/domains'));
      expect(page.results.map((d) => d.domain)).toEqual(['www.example.com']);
      expect((await alice.api.get('/v1/apps/web/logs/')).text).toMatch(/alice added domain www\.example\.com/);
    });

    it('accepts labels of 63 characters and names of 253', async () => {
      const label = 'a'.repeat(63);
      const name = `${label}.${label}.${label}.${'b'.repeat(57)}.com`;
      expect(name).toHaveLength(253);
      for (const domain of [`${label}.example.com`, name]) {
        expect((await alice.api.post('/v1/apps/web/domains/', { domain })).status).toBe(201);
        expectNoContent(await alice.api.delete(`/v1/apps/web/domains/${domain}`));
      }
    });

    it.each([
      ['a wildcard', '*.example.com'],
      ['a single label', 'example'],
      ['an all-digit last label', 'example.123'],
      ['an IP address', '192.0.2.1'],
      ['a label of 64 characters', `${'a'.repeat(64)}.example.com`],
      ['a name of 254 characters', `${'a'.repeat(63)}.${'a'.repeat(63)}.${'a'.repeat(63)}.${'b'.repeat(58)}.com`],
      ['a label starting with a dash', '-bad.example.com'],
      ['a label ending with a dash', 'bad-.example.com'],
      ['an underscore', 'under_score.example.com'],
      ['an empty label', 'a..example.com'],
      ['a space', 'bad name.example.com'],
      ['the platform domain', 'localhost'],
      ['a name under the platform domain', 'web.localhost'],
      ['an empty string', ''],
      ['a number', 42],
      ['null', null],
    ])('refuses %s with 400 on domain', async (_what, domain) => {
      expectFieldErrors(await alice.api.post('/v1/apps/web/domains/', { domain }), ['domain']);
    });

    it('refuses a missing domain', async () => {
      expectFieldErrors(await alice.api.post('/v1/apps/web/domains/', {}), ['domain']);
    });

    it('lets a domain belong to one app only: 400 unique, whatever the case or trailing dot', async () => {
      expectUnique(await alice.api.post('/v1/apps/web/domains/', { domain: 'www.example.com' }), 'domain');
      expectUnique(await bob.api.post('/v1/apps/other/domains/', { domain: 'WWW.EXAMPLE.COM.' }), 'domain');
    });

    it('removes with 204; an unknown domain or one of another app is 404', async () => {
      expect((await bob.api.post('/v1/apps/other/domains/', { domain: 'bob.example.org' })).status).toBe(201);
      expectDetail(await alice.api.delete('/v1/apps/web/domains/bob.example.org'), 404);
      expectDetail(await alice.api.delete('/v1/apps/web/domains/nothing.example.org'), 404);
      expectNoContent(await alice.api.delete('/v1/apps/web/domains/WWW.example.com'));
      expect(expectPage(await alice.api.get('/v1/apps/web/domains/')).count).toBe(0);
      expect(expectPage(await bob.api.get('/v1/apps/other/domains/')).count).toBe(1);
    });
  });

  describe('keys', () => {
    let aliceKey: string;

    it('adds an Ed25519 key: 201 Key with its SHA256 fingerprint', async () => {
      aliceKey = ed25519PublicKey('alice@laptop');
      const res = await alice.api.post<KeyJson>('/v1/keys/', { id: 'laptop', public: aliceKey });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(KEY_FIELDS);
      expect(res.body).toMatchObject({ id: 'laptop', owner: 'alice' });
      expect(res.body.public).toMatch(/^ssh-ed25519 AAAA/);
      expect(res.body.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
      expect(res.body.uuid).toMatch(UUID);
    });

    it('accepts ECDSA and RSA keys of at least 2048 bits', async () => {
      expect((await alice.api.post('/v1/keys/', { id: 'ecdsa', public: ecdsaPublicKey() })).status).toBe(201);
      expect((await alice.api.post('/v1/keys/', { id: 'rsa', public: rsaPublicKey(2048) })).status).toBe(201);
    });

    it.each([
      ['an RSA key of 1024 bits', () => rsaPublicKey(1024)],
      ['a DSA key', () => dsaPublicKey()],
      ['text that is not a key', () => 'hello world'],
      ['a key with broken base64', () => 'ssh-ed25519 AAAA!!!! x'],
      ['a private key', () => fixture('ed25519.key.pem')],
      ['two keys', () => `${ed25519PublicKey()}\n${ed25519PublicKey()}`],
      ['an empty string', () => ''],
    ])('refuses %s with 400 on public', async (_what, make) => {
      expectFieldErrors(await alice.api.post('/v1/keys/', { id: 'bad', public: make() }), ['public']);
    });

    it('reports a missing id and public at once; an id of 129 characters is refused', async () => {
      expectFieldErrors(await alice.api.post('/v1/keys/', {}), ['id', 'public']);
      expectFieldErrors(await alice.api.post('/v1/keys/', { id: 'k'.repeat(129), public: ed25519PublicKey() }), ['id']);
      expect((await alice.api.post('/v1/keys/', { id: 'k'.repeat(128), public: ed25519PublicKey() })).status).toBe(201);
    });

    it('keeps ids unique per user and key material unique platform-wide', async () => {
      expectUnique(await alice.api.post('/v1/keys/', { id: 'laptop', public: ed25519PublicKey() }), 'id');
      expectUnique(await alice.api.post('/v1/keys/', { id: 'laptop-again', public: aliceKey }), 'public');
      expectUnique(await bob.api.post('/v1/keys/', { id: 'stolen', public: aliceKey }), 'public');
      expect((await bob.api.post('/v1/keys/', { id: 'laptop', public: ed25519PublicKey('bob@laptop') })).status).toBe(201);
    });

    it('lists only the caller\'s keys', async () => {
      const mine = expectPage<KeyJson>(await alice.api.get('/v1/keys/'));
      expect(mine.results.map((k) => k.id).sort()).toEqual(['ecdsa', 'k'.repeat(128), 'laptop', 'rsa']);
      for (const key of mine.results) expect(Object.keys(key).sort()).toEqual(KEY_FIELDS);
      const bobs = expectPage<KeyJson>(await bob.api.get('/v1/keys'));
      expect(bobs.results.map((k) => [k.id, k.owner])).toEqual([['laptop', 'bob']]);
      const admins = expectPage<KeyJson>(await admin.api.get('/v1/keys'));
      expect(admins.count).toBe(0);
    });

    it('removes the caller\'s key with 204; an unknown key is 404 and another user\'s key stays', async () => {
      expectNoContent(await alice.api.delete('/v1/keys/laptop'));
      expectDetail(await alice.api.delete('/v1/keys/laptop/'), 404);
      expect(expectPage<KeyJson>(await bob.api.get('/v1/keys')).count).toBe(1);
      expectDetail(await admin.api.delete('/v1/keys/rsa'), 404);
      expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: aliceKey })).status).toBe(201);
    });

    it('accepts a key as read from a .pub file: trailing newline, or no comment', async () => {
      const withNewline = await alice.api.post<KeyJson>('/v1/keys/', { id: 'from-file', public: `${ed25519PublicKey('me@host')}\n` });
      expect(withNewline.status).toBe(201);
      expect(withNewline.body.public).not.toMatch(/\n/);
      const bare = ed25519PublicKey('x').split(' ').slice(0, 2).join(' ');
      expect((await alice.api.post('/v1/keys/', { id: 'bare', public: bare })).status).toBe(201);
    });

    it('handles key names that need percent-encoding in the path', async () => {
      const id = 'my key é';
      expect((await alice.api.post('/v1/keys/', { id, public: ed25519PublicKey() })).status).toBe(201);
      expectNoContent(await alice.api.delete(`/v1/keys/${encodeURIComponent(id)}`));
    });
  });

  describe('certificates (1.2)', () => {
    // A certificate is accepted only for names of the uploader's apps.
    beforeAll(async () => {
      for (const name of ['early', 'rsa', 'www.rsa', 'ec', 'www.ec', 'ed', 'san-only', 'b', 'cn13', 'custom', 'cn12', 'x']) {
        expect((await alice.api.post('/v1/apps/web/domains/', { domain: `${name}.example.com` })).status).toBe(201);
      }
    });

    it('do not exist before 1.2', async () => {
      const pair = rsaPair({ commonName: 'early.example.com' });
      expectNotFound(await alice.api.at('1.1').get('/v1/certs'));
      expectNotFound(await alice.api.at('1.1').post('/v1/certs/', pair));
      expectNotFound(await alice.api.at('1.1').get('/v1/certs/early.example.com'));
      expectNotFound(await alice.api.at('1.0').get('/v1/certs/'));
    });

    it('adds an RSA certificate made with node-forge: 201 with the detail, never the key', async () => {
      const pair = rsaPair({ commonName: 'rsa.example.com', dnsNames: ['rsa.example.com', 'www.rsa.example.com'] });
      const res = await alice.api.at('1.2').post<CertificateJson>('/v1/certs/', pair);
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(CERT_FIELDS);
      expect(res.body).toMatchObject({ common_name: 'rsa.example.com', owner: 'alice', san: ['rsa.example.com', 'www.rsa.example.com'] });
      expect(Number.isInteger(res.body.id)).toBe(true);
      expect(res.body.expires).toMatch(APP_TIMESTAMP);
      expect(res.body.starts).toMatch(APP_TIMESTAMP);
      expect(res.body.issuer).toMatch(/Example/);
      expect(res.text).not.toMatch(/PRIVATE KEY/);
    });

    it('adds the ECDSA P-256 and Ed25519 fixtures', async () => {
      const ec = await alice.api.post<CertificateJson>('/v1/certs', ecdsaPair());
      expect(ec.status).toBe(201);
      expect(ec.body).toMatchObject({ common_name: 'ec.example.com', san: ['ec.example.com', 'www.ec.example.com'] });
      expect(ec.body.issuer).toMatch(/Example Test CA/);
      const ed = await alice.api.post<CertificateJson>('/v1/certs/', ed25519Pair());
      expect(ed.status).toBe(201);
      expect(ed.body).toMatchObject({ common_name: 'ed.example.com', san: ['ed.example.com'] });
    });

    it('names a certificate without a common name after its first DNS name', async () => {
      const res = await alice.api.post<CertificateJson>('/v1/certs/', rsaPair({ dnsNames: ['san-only.example.com', 'b.example.com'] }));
      expect(res.status).toBe(201);
      expect(res.body.common_name).toBe('san-only.example.com');
    });

    it('takes the optional common_name from 1.3 and ignores it at 1.2', async () => {
      const at13 = await alice.api.at('1.3').post<CertificateJson>('/v1/certs/', { ...rsaPair({ commonName: 'cn13.example.com' }), common_name: 'custom.example.com' });
      expect([at13.status, at13.body.common_name]).toEqual([201, 'custom.example.com']);
      const at12 = await alice.api.at('1.2').post<CertificateJson>('/v1/certs/', { ...rsaPair({ commonName: 'cn12.example.com' }), common_name: 'ignored.example.com' });
      expect([at12.status, at12.body.common_name]).toEqual([201, 'cn12.example.com']);
      expectFieldErrors(await alice.api.post('/v1/certs/', { ...rsaPair({ commonName: 'x.example.com' }), common_name: 'not a host!' }), ['common_name']);
    });

    it('lists {common_name, expires} only, the caller\'s own; administrators see all', async () => {
      const mine = expectPage<CertificateItemJson>(await alice.api.get('/v1/certs'));
      expect(mine.count).toBe(6);
      for (const item of mine.results) {
        expect(Object.keys(item).sort()).toEqual(['common_name', 'expires']);
        expect(item.expires).toMatch(APP_TIMESTAMP);
      }
      expect(expectPage(await bob.api.get('/v1/certs/')).count).toBe(0);
      expect(expectPage(await admin.api.get('/v1/certs/')).count).toBe(6);
    });

    it('shows one certificate by common name to its owner and administrators, 404 to others', async () => {
      const res = await alice.api.get<CertificateJson>('/v1/certs/ec.example.com');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(CERT_FIELDS);
      expect(res.body.fingerprint).toMatch(/[0-9A-Fa-f]/);
      expect((await admin.api.get('/v1/certs/ec.example.com/')).status).toBe(200);
      expectDetail(await bob.api.get('/v1/certs/ec.example.com'), 404);
      expectDetail(await alice.api.get('/v1/certs/none.example.com'), 404);
    });

    it('refuses a duplicate common name with 400 unique', async () => {
      expectUnique(await alice.api.post('/v1/certs/', ecdsaPair()), 'common_name');
      // Another tenant may not even try: the name is not theirs.
      expectDetail(await bob.api.post('/v1/certs/', rsaPair({ commonName: 'rsa.example.com' })), 403);
    });

    it.each([
      ['a key that does not match', () => ({ certificate: fixture('ec-p256.crt.pem'), key: fixture('other-ec-p256.key.pem') }), ['key']],
      ['an Ed25519 key for an ECDSA certificate', () => ({ certificate: fixture('ec-p256.crt.pem'), key: fixture('other-ed25519.key.pem') }), ['key']],
      ['a certificate that is not PEM', () => ({ certificate: 'hello', key: fixture('ec-p256.key.pem') }), ['certificate']],
      ['a key that is not PEM', () => ({ certificate: fixture('ed25519.crt.pem'), key: 'hello' }), ['key']],
      ['a public key instead of the private key', () => ({ certificate: fixture('ed25519.crt.pem'), key: fixture('ed25519.crt.pem') }), ['key']],
      ['nothing', () => ({}), ['certificate', 'key']],
      ['numbers', () => ({ certificate: 1, key: 2 }), ['certificate', 'key']],
    ])('refuses %s with 400 on the field', async (_what, make, fields) => {
      expectFieldErrors(await bob.api.post('/v1/certs/', make()), fields);
      expect(expectPage(await bob.api.get('/v1/certs/')).count).toBe(0);
    });

    it('refuses an Ed448 certificate with 400', async () => {
      const res = await bob.api.post('/v1/certs/', { certificate: fixture('ed448.crt.pem'), key: fixture('ed448.key.pem') });
      expect(res.status).toBe(400);
    });

    it('deletes with 204 (owner or administrator); others get 404', async () => {
      expectDetail(await bob.api.delete('/v1/certs/ec.example.com'), 404);
      expectNoContent(await alice.api.delete('/v1/certs/ec.example.com'));
      expectDetail(await alice.api.get('/v1/certs/ec.example.com'), 404);
      expectNoContent(await admin.api.delete('/v1/certs/ed.example.com/'));
      expectDetail(await alice.api.delete('/v1/certs/ed.example.com'), 404);
    });

    it('stores a wildcard certificate under its wildcard common name', async () => {
      const res = await alice.api.post<CertificateJson>('/v1/certs/', rsaPair({ commonName: '*.web.localhost', dnsNames: ['*.web.localhost'] }));
      expect([res.status, res.body.common_name]).toEqual([201, '*.web.localhost']);
      expect((await alice.api.get('/v1/certs/*.web.localhost')).status).toBe(200);
      expectNoContent(await alice.api.delete(`/v1/certs/${encodeURIComponent('*.web.localhost')}`));
    });

    it('accepts a certificate followed by its chain', async () => {
      const res = await alice.api.post<CertificateJson>('/v1/certs/', { certificate: fixture('ec-p256-chain.pem'), key: fixture('ec-p256.key.pem') });
      expect([res.status, res.body.common_name]).toEqual([201, 'ec.example.com']);
    });
  });
});
