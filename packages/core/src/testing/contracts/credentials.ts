/// <reference types="jest" />
import type { UnitOfWork } from '../../ports/repositories';
import { aCertificate, aKey, at, expectAlreadyExists, seedUser } from './fixtures';

const ALL = { offset: 0, limit: 100 };

/** Contracts of KeyRepository. */
export function describeKeys(uow: () => UnitOfWork): void {
  describe('KeyRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedUser(repos, 'bob');
    });

    it('create then find and findByFingerprint return every field', async () => {
      const repos = uow().repositories;
      const key = aKey('alice', 'alice@laptop', 'material-1', { created: at(80, 8), updated: at(81, 9) });

      await repos.keys.create(key);

      expect(await repos.keys.find('alice', 'alice@laptop')).toEqual(key);
      expect(await repos.keys.findByFingerprint('SHA256:material-1')).toEqual(key);
    });

    it('find is per owner', async () => {
      const repos = uow().repositories;
      await repos.keys.create(aKey('alice', 'laptop'));

      expect(await repos.keys.find('bob', 'laptop')).toBeNull();
      expect(await repos.keys.find('alice', 'desktop')).toBeNull();
      expect(await repos.keys.findByFingerprint('SHA256:unknown')).toBeNull();
    });

    it('create with a taken (owner, id) throws AlreadyExists on id', async () => {
      const repos = uow().repositories;
      await repos.keys.create(aKey('alice', 'laptop', 'first'));

      await expectAlreadyExists(repos.keys.create(aKey('alice', 'laptop', 'second')), 'id');
      expect((await repos.keys.find('alice', 'laptop'))?.fingerprint).toBe('SHA256:first');
    });

    it('the same id may be used by different owners', async () => {
      const repos = uow().repositories;
      await repos.keys.create(aKey('alice', 'laptop', 'first'));
      await repos.keys.create(aKey('bob', 'laptop', 'second'));

      expect((await repos.keys.find('bob', 'laptop'))?.fingerprint).toBe('SHA256:second');
    });

    it('create with key material already registered throws AlreadyExists on public, for any owner', async () => {
      const repos = uow().repositories;
      await repos.keys.create(aKey('alice', 'laptop', 'shared'));

      await expectAlreadyExists(repos.keys.create(aKey('alice', 'desktop', 'shared')), 'public');
      await expectAlreadyExists(repos.keys.create(aKey('bob', 'laptop-2', 'shared')), 'public');
      expect(await repos.keys.find('bob', 'laptop-2')).toBeNull();
    });

    it('listForOwner returns the owner’s keys ordered by id, paged with the count', async () => {
      const repos = uow().repositories;
      for (const id of ['work', 'home', 'ci', 'zz-top', 'laptop']) await repos.keys.create(aKey('alice', id));
      await repos.keys.create(aKey('bob', 'aaa'));

      const all = await repos.keys.listForOwner('alice', ALL);
      const page = await repos.keys.listForOwner('alice', { offset: 3, limit: 1 });

      expect(all.count).toBe(5);
      expect(all.items.map((k) => k.id)).toEqual(['ci', 'home', 'laptop', 'work', 'zz-top']);
      expect(page).toEqual({ count: 5, items: [all.items[3]] });
    });

    it('delete removes that key only and frees its material', async () => {
      const repos = uow().repositories;
      await repos.keys.create(aKey('alice', 'laptop', 'm1'));
      await repos.keys.create(aKey('alice', 'desktop', 'm2'));
      await repos.keys.create(aKey('bob', 'laptop', 'm3'));

      await repos.keys.delete('alice', 'laptop');
      await repos.keys.create(aKey('bob', 'reused', 'm1'));

      expect(await repos.keys.find('alice', 'laptop')).toBeNull();
      expect(await repos.keys.find('alice', 'desktop')).not.toBeNull();
      expect(await repos.keys.find('bob', 'laptop')).not.toBeNull();
      expect((await repos.keys.findByFingerprint('SHA256:m1'))?.owner).toBe('bob');
    });
  });
}

/** Contracts of CertificateRepository. */
export function describeCertificates(uow: () => UnitOfWork): void {
  describe('CertificateRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedUser(repos, 'bob');
    });

    it('create assigns an id and find returns every field', async () => {
      const repos = uow().repositories;
      const input = aCertificate('alice', 'shop.example.com', {
        san: ['shop.example.com', '*.shop.example.com', 'shop.example.org'],
        issuer: "/C=US/O=Let's Encrypt/CN=R3",
        starts: at(100, 1),
        expires: at(200, 2),
      });

      const created = await repos.certificates.create(input);
      const found = await repos.certificates.find('shop.example.com');

      expect(Number.isInteger(created.id)).toBe(true);
      expect(created).toEqual({ ...input, id: created.id });
      expect(found).toEqual(created);
      expect(found?.expires).toBeInstanceOf(Date);
    });

    it('create keeps an empty subject-alternative-name list', async () => {
      const repos = uow().repositories;
      await repos.certificates.create(aCertificate('alice', 'bare.example.com', { san: [] }));

      expect((await repos.certificates.find('bare.example.com'))?.san).toEqual([]);
    });

    it('create gives distinct ids', async () => {
      const repos = uow().repositories;
      const first = await repos.certificates.create(aCertificate('alice', 'a.example.com'));
      const second = await repos.certificates.create(aCertificate('bob', 'b.example.com'));

      expect(second.id).not.toBe(first.id);
    });

    it('find of an unknown common name returns null', async () => {
      expect(await uow().repositories.certificates.find('none.example.com')).toBeNull();
    });

    it('create with a taken common name throws AlreadyExists on common_name, for any owner', async () => {
      const repos = uow().repositories;
      await repos.certificates.create(aCertificate('alice', 'example.com'));

      await expectAlreadyExists(repos.certificates.create(aCertificate('bob', 'example.com')), 'common_name');
      expect((await repos.certificates.find('example.com'))?.owner).toBe('alice');
    });

    it('list of an owner is ordered by common name and paged with the count; null lists all', async () => {
      const repos = uow().repositories;
      for (const name of ['www.example.com', 'api.example.com', 'example.com']) {
        await repos.certificates.create(aCertificate('alice', name));
      }
      await repos.certificates.create(aCertificate('bob', 'bob.example.com'));

      const mine = await repos.certificates.list('alice', ALL);
      const page = await repos.certificates.list('alice', { offset: 1, limit: 1 });
      const all = await repos.certificates.list(null, ALL);

      expect(mine.count).toBe(3);
      expect(mine.items.map((c) => c.commonName)).toEqual(['api.example.com', 'example.com', 'www.example.com']);
      expect(page).toEqual({ count: 3, items: [mine.items[1]] });
      expect(all.count).toBe(4);
      expect(all.items.map((c) => c.commonName)).toEqual([
        'api.example.com',
        'bob.example.com',
        'example.com',
        'www.example.com',
      ]);
    });

    it('delete removes that certificate only and frees the common name', async () => {
      const repos = uow().repositories;
      await repos.certificates.create(aCertificate('alice', 'a.example.com'));
      await repos.certificates.create(aCertificate('alice', 'b.example.com'));

      await repos.certificates.delete('a.example.com');
      await repos.certificates.create(aCertificate('bob', 'a.example.com'));

      expect((await repos.certificates.find('a.example.com'))?.owner).toBe('bob');
      expect((await repos.certificates.list('alice', ALL)).items.map((c) => c.commonName)).toEqual(['b.example.com']);
    });
  });
}
