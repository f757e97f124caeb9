import {
  Conflict,
  Forbidden,
  NotFound,
  RequestRejected,
  ValidationFailed,
} from '@svc/core';
import type { Actor } from '@svc/core';
import { BUILDER_PASSWORD, aCertificate, aKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

describe('ChangePassword', () => {
  it('with the right current password stores the new one; the old one no longer logs in', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    await world.useCases.changePassword.execute(alice, { password: BUILDER_PASSWORD, new_password: 'n3w' }, '1.7');

    await expect(world.useCases.login.execute({ username: 'alice', password: 'n3w' })).resolves.toHaveProperty('token');
    expect(await rejectionOf(world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD }))).toBeInstanceOf(
      ValidationFailed,
    );
  });

  it('with a wrong current password is refused with "Current password does not match" and changes nothing', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.changePassword.execute(alice, { password: 'wrong', new_password: 'n3w' }, '1.7'));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.message).toBe('Current password does not match');
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('revokes the user\'s other tokens but keeps the one used for the change', async () => {
    const world = new World();
    const other = await world.actor('alice');
    const current = await world.actor('alice');

    await world.useCases.changePassword.execute(current, { password: BUILDER_PASSWORD, new_password: 'n3w' }, '1.7');

    expect(world.tokenHashesOf('alice')).toEqual([current.tokenHash]);
    expect(world.tokenHashesOf('alice')).not.toContain(other.tokenHash);
  });

  it('requires password and new_password for one\'s own change', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const error = await rejectionOf(world.useCases.changePassword.execute(alice, {}, '1.7'));

    expect(error.fields).toEqual({ password: ['This field is required.'], new_password: ['This field is required.'] });
  });

  it('naming oneself is an ordinary change that needs the current password', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });

    const error = await rejectionOf(world.useCases.changePassword.execute(root, { username: 'root', new_password: 'n3w' }, '1.7'));

    expect(error.fields).toEqual({ password: ['This field is required.'] });
  });

  it('a regular user naming another user is Forbidden, and that user keeps their password', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.actor('bob');

    const error = await rejectionOf(
      world.useCases.changePassword.execute(alice, { username: 'bob', password: BUILDER_PASSWORD, new_password: 'x' }, '1.7'),
    );

    expect(error).toBeInstanceOf(Forbidden);
    expect((await world.uow.repositories.users.findByUsername('bob'))?.passwordHash).toBe(`fake:${BUILDER_PASSWORD}`);
  });

  describe('an administrator changing another user\'s password', () => {
    it('before 1.6 must give their own password', async () => {
      const world = new World();
      const root = await world.actor('root', { admin: true, password: 'rootpw' });
      await world.actor('bob');

      const missing = await rejectionOf(world.useCases.changePassword.execute(root, { username: 'bob', new_password: 'x' }, '1.5'));
      const wrong = await rejectionOf(
        world.useCases.changePassword.execute(root, { username: 'bob', password: BUILDER_PASSWORD, new_password: 'x' }, '1.4'),
      );

      expect(missing.fields).toEqual({ password: ['This field is required.'] });
      expect(wrong).toBeInstanceOf(RequestRejected);
      expect(wrong.message).toBe('Current password does not match');
      expect((await world.uow.repositories.users.findByUsername('bob'))?.passwordHash).toBe(`fake:${BUILDER_PASSWORD}`);
    });

    it('before 1.6 succeeds with their own password, and revokes every token of that user', async () => {
      const world = new World();
      const root = await world.actor('root', { admin: true, password: 'rootpw' });
      await world.actor('bob');
      await world.actor('bob');

      await world.useCases.changePassword.execute(root, { username: 'bob', password: 'rootpw', new_password: 'bobs-new' }, '1.5');

      expect((await world.uow.repositories.users.findByUsername('bob'))?.passwordHash).toBe('fake:bobs-new');
      expect(world.tokenHashesOf('bob')).toEqual([]);
      expect(world.tokenHashesOf('root')).toEqual([root.tokenHash]);
    });

    it('from 1.6 may omit their password', async () => {
      const world = new World();
      const root = await world.actor('root', { admin: true, password: 'rootpw' });
      await world.actor('bob');

      await world.useCases.changePassword.execute(root, { username: 'bob', new_password: 'bobs-new' }, '1.6');

      expect((await world.uow.repositories.users.findByUsername('bob'))?.passwordHash).toBe('fake:bobs-new');
    });

    it('from 1.6 is still refused when the password given is wrong', async () => {
      const world = new World();
      const root = await world.actor('root', { admin: true, password: 'rootpw' });
      await world.actor('bob');

      const error = await rejectionOf(
        world.useCases.changePassword.execute(root, { username: 'bob', password: 'wrong', new_password: 'x' }, '1.7'),
      );

      expect(error).toBeInstanceOf(RequestRejected);
    });

    it('gets NotFound for an unknown user', async () => {
      const world = new World();
      const root = await world.actor('root', { admin: true });

      expect(
        await rejectionOf(world.useCases.changePassword.execute(root, { username: 'nobody', new_password: 'x' }, '1.7')),
      ).toBeInstanceOf(NotFound);
    });
  });
});

describe('CancelAccount', () => {
  it('deletes the caller with their tokens, keys, certificates and permissions', async () => {
    const world = new World();
    const bob = await world.actor('bob');
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.uow.repositories.keys.create(aKey({ owner: 'bob', id: 'laptop' }));
    await world.uow.repositories.certificates.create(aCertificate({ owner: 'bob' }));

    await world.useCases.cancelAccount.execute(bob, undefined, '1.7');

    const state = world.uow.snapshot();
    expect(state.users.map((u) => u.username)).toEqual(['alice']);
    expect(state.tokens.every((t) => t.username !== 'bob')).toBe(true);
    expect(state.keys).toEqual([]);
    expect(state.certificates).toEqual([]);
    expect(state.permissions).toEqual([]);
    expect(state.apps.map((a) => a.id)).toEqual(['myapp']);
  });

  it('refuses a user who still owns applications with Conflict, and deletes nothing', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.cancelAccount.execute(alice, undefined, '1.7'));

    expect(error).toBeInstanceOf(Conflict);
    expect(error.message).toBe('alice still owns applications; delete or transfer them first');
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('an administrator deletes another user with their own password before 1.6', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true, password: 'rootpw' });
    await world.actor('bob');

    await world.useCases.cancelAccount.execute(root, { username: 'bob', password: 'rootpw' }, '1.5');

    expect(await world.uow.repositories.users.findByUsername('bob')).toBeNull();
  });

  it('an administrator without or with a wrong password before 1.6 is refused, and the user stays', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true, password: 'rootpw' });
    await world.actor('bob');

    const missing = await rejectionOf(world.useCases.cancelAccount.execute(root, { username: 'bob' }, '1.0'));
    const wrong = await rejectionOf(world.useCases.cancelAccount.execute(root, { username: 'bob', password: 'nope' }, '1.5'));

    expect(missing).toBeInstanceOf(ValidationFailed);
    expect(missing.fields).toEqual({ password: ['This field is required.'] });
    expect(wrong).toBeInstanceOf(RequestRejected);
    expect(await world.uow.repositories.users.findByUsername('bob')).not.toBeNull();
  });

  it('an administrator deletes another user without a password from 1.6', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    await world.actor('bob');

    await world.useCases.cancelAccount.execute(root, { username: 'bob' }, '1.6');

    expect(await world.uow.repositories.users.findByUsername('bob')).toBeNull();
    expect(await world.uow.repositories.users.findByUsername('root')).not.toBeNull();
  });

  it('an administrator gets Conflict naming a user who owns applications', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    const bob = await world.actor('bob');
    await world.app(bob, 'bobs-app');

    const error = await rejectionOf(world.useCases.cancelAccount.execute(root, { username: 'bob' }, '1.7'));

    expect(error).toBeInstanceOf(Conflict);
    expect(error.message).toBe('bob still owns applications; delete or transfer them first');
  });

  it('a regular user naming another user is Forbidden; an administrator naming an unknown user gets NotFound', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    const alice = await world.actor('alice');
    await world.actor('bob');

    expect(await rejectionOf(world.useCases.cancelAccount.execute(alice, { username: 'bob' }, '1.7'))).toBeInstanceOf(Forbidden);
    expect(await rejectionOf(world.useCases.cancelAccount.execute(root, { username: 'nobody' }, '1.7'))).toBeInstanceOf(NotFound);
    expect(world.uow.snapshot().users.map((u) => u.username).sort()).toEqual(['alice', 'bob', 'root']);
  });
});

describe('administrators', () => {
  let world: World;
  let root: Actor;
  let alice: Actor;

  beforeEach(async () => {
    world = new World();
    root = await world.actor('root', { admin: true });
    alice = await world.actor('alice');
  });

  it('ListUsers lists every user to an administrator and is Forbidden to others', async () => {
    const page = await world.useCases.listUsers.execute(root, PAGE);

    expect(page.count).toBe(2);
    expect(page.items.map((u) => u.username)).toEqual(['root', 'alice']);
    expect(await rejectionOf(world.useCases.listUsers.execute(alice, PAGE))).toBeInstanceOf(Forbidden);
  });

  it('ListUsers answers NotFound for a page past the end', async () => {
    expect(await rejectionOf(world.useCases.listUsers.execute(root, { page: 2, pageSize: 2 }))).toBeInstanceOf(NotFound);
  });

  it('GrantAdmin makes a user superuser and staff; ListAdmins then lists them', async () => {
    await world.useCases.grantAdmin.execute(root, { username: 'alice' });

    const stored = await world.uow.repositories.users.findByUsername('alice');
    expect(stored).toMatchObject({ isSuperuser: true, isStaff: true });
    expect((await world.useCases.listAdmins.execute(root, PAGE)).items.map((u) => u.username)).toEqual(['root', 'alice']);
  });

  it('GrantAdmin is Forbidden to regular users, needs a username and knows every user', async () => {
    await world.actor('bob');

    expect(await rejectionOf(world.useCases.grantAdmin.execute(alice, { username: 'bob' }))).toBeInstanceOf(Forbidden);
    expect((await rejectionOf(world.useCases.grantAdmin.execute(root, {}))).fields).toEqual({ username: ['This field is required.'] });
    expect(await rejectionOf(world.useCases.grantAdmin.execute(root, { username: 'nobody' }))).toBeInstanceOf(NotFound);
    expect((await world.uow.repositories.users.findByUsername('bob'))?.isSuperuser).toBe(false);
  });

  it('RevokeAdmin takes the rights of one of several administrators', async () => {
    await world.useCases.grantAdmin.execute(root, { username: 'alice' });

    await world.useCases.revokeAdmin.execute(root, 'alice');

    expect(await world.uow.repositories.users.findByUsername('alice')).toMatchObject({ isSuperuser: false, isStaff: false });
  });

  it('RevokeAdmin refuses to revoke the last administrator with Conflict', async () => {
    const error = await rejectionOf(world.useCases.revokeAdmin.execute(root, 'root'));

    expect(error).toBeInstanceOf(Conflict);
    expect((await world.uow.repositories.users.findByUsername('root'))?.isSuperuser).toBe(true);
  });

  it('RevokeAdmin on a regular user changes nothing; on an unknown user is NotFound; by a regular user is Forbidden', async () => {
    const before = world.uow.snapshot();

    await world.useCases.revokeAdmin.execute(root, 'alice');

    expect(world.uow.snapshot()).toEqual(before);
    expect(await rejectionOf(world.useCases.revokeAdmin.execute(root, 'nobody'))).toBeInstanceOf(NotFound);
    expect(await rejectionOf(world.useCases.revokeAdmin.execute(alice, 'root'))).toBeInstanceOf(Forbidden);
  });

  it('ListAdmins is Forbidden to regular users', async () => {
    expect(await rejectionOf(world.useCases.listAdmins.execute(alice, PAGE))).toBeInstanceOf(Forbidden);
  });
});
