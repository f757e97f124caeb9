/// <reference types="jest" />
import type { UnitOfWork } from '../../ports/repositories';
import {
  aCertificate,
  aKey,
  aToken,
  aUser,
  at,
  expectAlreadyExists,
  seedApp,
  seedUser,
} from './fixtures';

/** Contracts of UserRepository. */
export function describeUsers(uow: () => UnitOfWork): void {
  describe('UserRepository', () => {
    it('create assigns an id and findByUsername returns every field as written', async () => {
      const repos = uow().repositories;
      const input = aUser('alice', {
        email: 'alice@example.org',
        firstName: 'Alice',
        lastName: 'Liddell',
        isSuperuser: true,
        isStaff: true,
        lastLogin: at(100, 999),
        dateJoined: at(50, 1),
      });

      const created = await repos.users.create(input);
      const found = await repos.users.findByUsername('alice');

      expect(Number.isInteger(created.id)).toBe(true);
      expect(created).toEqual({ ...input, id: created.id });
      expect(found).toEqual(created);
      expect(found?.dateJoined).toBeInstanceOf(Date);
      expect(found?.lastLogin?.getTime()).toBe(at(100, 999).getTime());
    });

    it('create keeps a null last login and false flags', async () => {
      const repos = uow().repositories;
      await repos.users.create(aUser('bob', { isActive: false }));

      const found = await repos.users.findByUsername('bob');

      expect(found?.lastLogin).toBeNull();
      expect(found?.isActive).toBe(false);
      expect(found?.isSuperuser).toBe(false);
      expect(found?.isStaff).toBe(false);
    });

    it('create gives later users higher ids', async () => {
      const repos = uow().repositories;
      const first = await seedUser(repos, 'zed');
      const second = await seedUser(repos, 'amy');

      expect(second.id).toBeGreaterThan(first.id);
    });

    it('create with a taken username throws AlreadyExists on username', async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');

      await expectAlreadyExists(repos.users.create(aUser('alice', { email: 'other@example.com' })), 'username');
      expect((await repos.users.list({ offset: 0, limit: 10 })).count).toBe(1);
    });

    it('findByUsername of an unknown user returns null', async () => {
      expect(await uow().repositories.users.findByUsername('nobody')).toBeNull();
    });

    it('update writes every mutable field', async () => {
      const repos = uow().repositories;
      const user = await seedUser(repos, 'alice');
      const changed = {
        ...user,
        email: 'new@example.com',
        firstName: 'New',
        lastName: 'Name',
        passwordHash: 'scrypt$other',
        isSuperuser: true,
        isStaff: true,
        isActive: false,
        lastLogin: at(200, 456),
      };

      await repos.users.update(changed);

      expect(await repos.users.findByUsername('alice')).toEqual(changed);
    });

    it('update leaves other users alone', async () => {
      const repos = uow().repositories;
      const alice = await seedUser(repos, 'alice');
      const bob = await seedUser(repos, 'bob');

      await repos.users.update({ ...alice, email: 'changed@example.com' });

      expect(await repos.users.findByUsername('bob')).toEqual(bob);
    });

    it('list orders by id and pages with the total count', async () => {
      const repos = uow().repositories;
      const names = ['carol', 'alice', 'dave', 'bob', 'erin'];
      for (const name of names) await seedUser(repos, name);

      const all = await repos.users.list({ offset: 0, limit: 100 });
      const middle = await repos.users.list({ offset: 1, limit: 2 });
      const past = await repos.users.list({ offset: 10, limit: 2 });

      expect(all.count).toBe(5);
      expect(all.items.map((u) => u.username)).toEqual(names);
      expect(middle).toEqual({ count: 5, items: all.items.slice(1, 3) });
      expect(past).toEqual({ count: 5, items: [] });
    });

    it('list of an empty store is empty with count 0', async () => {
      expect(await uow().repositories.users.list({ offset: 0, limit: 10 })).toEqual({ count: 0, items: [] });
    });

    it('listAdmins and countAdmins cover superusers only, ordered by id', async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'root', { isSuperuser: true, isStaff: true });
      await seedUser(repos, 'plain');
      await seedUser(repos, 'staff', { isStaff: true });
      await seedUser(repos, 'admin', { isSuperuser: true });
      await seedUser(repos, 'boss', { isSuperuser: true });

      const admins = await repos.users.listAdmins({ offset: 0, limit: 10 });
      const second = await repos.users.listAdmins({ offset: 1, limit: 1 });

      expect(await repos.users.countAdmins()).toBe(3);
      expect(admins.count).toBe(3);
      expect(admins.items.map((u) => u.username)).toEqual(['root', 'admin', 'boss']);
      expect(second.count).toBe(3);
      expect(second.items.map((u) => u.username)).toEqual(['admin']);
    });

    it('countAdmins is 0 without administrators', async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'plain');

      expect(await repos.users.countAdmins()).toBe(0);
    });

    it("delete removes the user with its tokens, keys, certificates, permissions and login failures", async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedUser(repos, 'bob');
      await seedApp(repos, 'shared', 'alice');
      for (const name of ['alice', 'bob']) {
        await repos.tokens.add(aToken(name, `hash-${name}`));
        await repos.keys.create(aKey(name, 'laptop'));
        await repos.certificates.create(aCertificate(name, `${name}.example.com`));
        await repos.loginFailures.record(name, at(30));
      }
      await repos.permissions.grant('shared', 'bob');
      await repos.permissions.grant('shared', 'alice');

      await repos.users.delete('bob');

      expect(await repos.users.findByUsername('bob')).toBeNull();
      expect(await repos.tokens.findByHash('hash-bob')).toBeNull();
      expect(await repos.keys.find('bob', 'laptop')).toBeNull();
      expect(await repos.keys.findByFingerprint('SHA256:bob-laptop')).toBeNull();
      expect(await repos.certificates.find('bob.example.com')).toBeNull();
      expect(await repos.permissions.has('shared', 'bob')).toBe(false);
      expect(await repos.loginFailures.since('bob', at(0))).toEqual([]);

      expect(await repos.users.findByUsername('alice')).not.toBeNull();
      expect(await repos.tokens.findByHash('hash-alice')).not.toBeNull();
      expect(await repos.keys.find('alice', 'laptop')).not.toBeNull();
      expect(await repos.certificates.find('alice.example.com')).not.toBeNull();
      expect(await repos.permissions.listUsers('shared')).toEqual(['alice']);
      expect(await repos.loginFailures.since('alice', at(0))).toEqual([at(30)]);
      expect(await repos.apps.findById('shared')).not.toBeNull();
    });

    it('delete frees the username: a new account with it starts with nothing', async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'bob');
      await repos.tokens.add(aToken('bob', 'old-token'));
      await repos.keys.create(aKey('bob', 'laptop'));

      await repos.users.delete('bob');
      await seedUser(repos, 'bob');

      expect(await repos.tokens.findByHash('old-token')).toBeNull();
      expect((await repos.keys.listForOwner('bob', { offset: 0, limit: 10 })).count).toBe(0);
    });
  });
}

/** Contracts of TokenRepository. */
export function describeTokens(uow: () => UnitOfWork): void {
  describe('TokenRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedUser(repos, 'bob');
    });

    it('add then findByHash returns every field, with a null expiry', async () => {
      const repos = uow().repositories;
      const token = aToken('alice', 'a'.repeat(64), { created: at(11, 321) });

      await repos.tokens.add(token);

      expect(await repos.tokens.findByHash('a'.repeat(64))).toEqual(token);
    });

    it('add then findByHash returns the expiry date', async () => {
      const repos = uow().repositories;
      const token = aToken('alice', 'h1', { expires: at(3600, 777) });

      await repos.tokens.add(token);
      const found = await repos.tokens.findByHash('h1');

      expect(found?.expires).toBeInstanceOf(Date);
      expect(found).toEqual(token);
    });

    it('findByHash of an unknown hash returns null', async () => {
      expect(await uow().repositories.tokens.findByHash('missing')).toBeNull();
    });

    it('findWithUser returns the token and its user, every field of both', async () => {
      const repos = uow().repositories;
      const token = aToken('alice', 'h1', { expires: at(3600, 777) });
      await repos.tokens.add(token);
      await repos.tokens.add(aToken('bob', 'h2'));

      const found = await repos.tokens.findWithUser('h1');

      expect(found).toEqual({ token, user: await repos.users.findByUsername('alice') });
      expect(found?.token.expires).toBeInstanceOf(Date);
      expect(found?.user.dateJoined).toBeInstanceOf(Date);
    });

    it('findWithUser returns the user as it is now', async () => {
      const repos = uow().repositories;
      await repos.tokens.add(aToken('alice', 'h1'));
      const alice = await repos.users.findByUsername('alice');
      if (alice === null) throw new Error('alice was not created');
      const changed = { ...alice, isActive: false, isSuperuser: true, lastLogin: at(5, 5) };

      await repos.users.update(changed);

      expect((await repos.tokens.findWithUser('h1'))?.user).toEqual(changed);
    });

    it('findWithUser of an unknown hash returns null', async () => {
      expect(await uow().repositories.tokens.findWithUser('missing')).toBeNull();
    });

    it('a user may hold several tokens', async () => {
      const repos = uow().repositories;
      await repos.tokens.add(aToken('alice', 'h1'));
      await repos.tokens.add(aToken('alice', 'h2'));

      expect(await repos.tokens.findByHash('h1')).not.toBeNull();
      expect(await repos.tokens.findByHash('h2')).not.toBeNull();
    });

    it("deleteForUser removes that user's tokens only", async () => {
      const repos = uow().repositories;
      await repos.tokens.add(aToken('alice', 'a1'));
      await repos.tokens.add(aToken('alice', 'a2'));
      await repos.tokens.add(aToken('bob', 'b1'));

      await repos.tokens.deleteForUser('alice');

      expect(await repos.tokens.findByHash('a1')).toBeNull();
      expect(await repos.tokens.findByHash('a2')).toBeNull();
      expect(await repos.tokens.findByHash('b1')).not.toBeNull();
    });

    it("deleteForUserExcept keeps the named token and other users' tokens", async () => {
      const repos = uow().repositories;
      await repos.tokens.add(aToken('alice', 'a1'));
      await repos.tokens.add(aToken('alice', 'a2'));
      await repos.tokens.add(aToken('alice', 'a3'));
      await repos.tokens.add(aToken('bob', 'b1'));

      await repos.tokens.deleteForUserExcept('alice', 'a2');

      expect(await repos.tokens.findByHash('a1')).toBeNull();
      expect(await repos.tokens.findByHash('a2')).not.toBeNull();
      expect(await repos.tokens.findByHash('a3')).toBeNull();
      expect(await repos.tokens.findByHash('b1')).not.toBeNull();
    });

    it('deleteAll removes every token', async () => {
      const repos = uow().repositories;
      await repos.tokens.add(aToken('alice', 'a1'));
      await repos.tokens.add(aToken('bob', 'b1'));

      await repos.tokens.deleteAll();

      expect(await repos.tokens.findByHash('a1')).toBeNull();
      expect(await repos.tokens.findByHash('b1')).toBeNull();
    });
  });
}

/** Contracts of LoginFailureRepository. */
export function describeLoginFailures(uow: () => UnitOfWork): void {
  describe('LoginFailureRepository', () => {
    beforeEach(async () => {
      const repos = uow().repositories;
      await seedUser(repos, 'alice');
      await seedUser(repos, 'bob');
    });

    it('since returns failures at or after the instant, oldest first, with milliseconds', async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('alice', at(20, 5));
      await repos.loginFailures.record('alice', at(5, 1));
      await repos.loginFailures.record('alice', at(10, 250));
      await repos.loginFailures.record('alice', at(10, 249));
      await repos.loginFailures.record('bob', at(15));

      const failures = await repos.loginFailures.since('alice', at(10, 249));

      expect(failures).toEqual([at(10, 249), at(10, 250), at(20, 5)]);
      expect(failures[0]).toBeInstanceOf(Date);
    });

    it('since keeps repeated failures at the same instant', async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('alice', at(1));
      await repos.loginFailures.record('alice', at(1));

      expect(await repos.loginFailures.since('alice', at(0))).toEqual([at(1), at(1)]);
    });

    it('since returns nothing for a user without failures', async () => {
      expect(await uow().repositories.loginFailures.since('alice', at(0))).toEqual([]);
    });

    it('records failures for a username that has no account', async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('ghost', at(3));

      expect(await repos.loginFailures.since('ghost', at(0))).toEqual([at(3)]);
    });

    it("clear removes that user's failures only", async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('alice', at(1));
      await repos.loginFailures.record('alice', at(2));
      await repos.loginFailures.record('bob', at(3));

      await repos.loginFailures.clear('alice');

      expect(await repos.loginFailures.since('alice', at(0))).toEqual([]);
      expect(await repos.loginFailures.since('bob', at(0))).toEqual([at(3)]);
    });

    it('recent returns failures with their client addresses, oldest first; unknown is empty', async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('alice', at(2, 7), '203.0.113.9');
      await repos.loginFailures.record('alice', at(1), '2001:db8::/64');
      await repos.loginFailures.record('alice', at(3));
      await repos.loginFailures.record('bob', at(4), '203.0.113.9');

      expect(await repos.loginFailures.recent('alice', at(1))).toEqual([
        { at: at(1), address: '2001:db8::/64' },
        { at: at(2, 7), address: '203.0.113.9' },
        { at: at(3), address: '' },
      ]);
    });

    it('clear with an address removes that address\'s failures of that user only', async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('alice', at(1), '203.0.113.9');
      await repos.loginFailures.record('alice', at(2), '198.51.100.1');
      await repos.loginFailures.record('bob', at(3), '203.0.113.9');

      await repos.loginFailures.clear('alice', '203.0.113.9');

      expect(await repos.loginFailures.recent('alice', at(0))).toEqual([{ at: at(2), address: '198.51.100.1' }]);
      expect(await repos.loginFailures.since('bob', at(0))).toEqual([at(3)]);
    });

    it('recordCounting records the failure and counts the address\'s failures since the instant, over every username', async () => {
      const repos = uow().repositories;
      await repos.loginFailures.record('alice', at(1), '203.0.113.9');
      await repos.loginFailures.record('ghost', at(2), '203.0.113.9');
      await repos.loginFailures.record('bob', at(2), '198.51.100.1');

      expect(await repos.loginFailures.recordCounting('bob', at(3), '203.0.113.9', at(2))).toBe(2);
      expect(await repos.loginFailures.recordCounting('alice', at(4), '203.0.113.9', at(0))).toBe(4);
      expect(await repos.loginFailures.recordCounting('alice', at(4), '192.0.2.1', at(0))).toBe(1);
      expect(await repos.loginFailures.recent('bob', at(0))).toEqual([{ at: at(2), address: '198.51.100.1' }, { at: at(3), address: '203.0.113.9' }]);
    });
  });
}
