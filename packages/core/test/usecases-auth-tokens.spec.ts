import {
  Forbidden,
  NotAuthenticated,
  NotFound,
  ValidationFailed,
} from '@svc/core';
import { BUILDER_PASSWORD } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

describe('Authenticate', () => {
  it('resolves a valid token to the user and the hash it is stored under', async () => {
    const world = new World();
    await world.actor('alice');
    const { token } = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });

    const actor = await world.useCases.authenticate.execute(token);

    expect(actor.tokenHash).toBe(`h:${token}`);
    expect(actor.user.username).toBe('alice');
  });

  it.each([[''], ['abc'], ['A'.repeat(40)], ['0'.repeat(41)], [`${'0'.repeat(39)}g`]])('refuses the malformed token %p', async (token) => {
    const world = new World();
    expect(await rejectionOf(world.useCases.authenticate.execute(token))).toBeInstanceOf(NotAuthenticated);
  });

  it('refuses a well-formed token that was never issued', async () => {
    const world = new World();
    expect(await rejectionOf(world.useCases.authenticate.execute('f'.repeat(40)))).toBeInstanceOf(NotAuthenticated);
  });

  it('refuses the token of an inactive user', async () => {
    const world = new World();
    await world.actor('alice');
    const { token } = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });
    const stored = await world.uow.repositories.users.findByUsername('alice');
    await world.uow.repositories.users.update({ ...stored!, isActive: false });

    expect(await rejectionOf(world.useCases.authenticate.execute(token))).toBeInstanceOf(NotAuthenticated);
  });
});

describe('RegenerateToken', () => {
  async function loginAs(world: World, username: string): Promise<string> {
    return (await world.useCases.login.execute({ username, password: BUILDER_PASSWORD })).token;
  }

  it('without a body revokes every token of the caller and returns a new one', async () => {
    const world = new World();
    await world.actor('alice');
    await world.actor('bob');
    const first = await loginAs(world, 'alice');
    const second = await loginAs(world, 'alice');
    const bobs = await loginAs(world, 'bob');
    const caller = await world.useCases.authenticate.execute(first);

    const { token } = await world.useCases.regenerateToken.execute(caller, undefined);

    expect(world.tokenHashesOf('alice')).toEqual([`h:${token}`]);
    expect(await rejectionOf(world.useCases.authenticate.execute(second))).toBeInstanceOf(NotAuthenticated);
    expect((await world.useCases.authenticate.execute(token)).user.username).toBe('alice');
    await expect(world.useCases.authenticate.execute(bobs)).resolves.toBeDefined();
  });

  it('with a username, an administrator replaces that user\'s tokens and gets the user\'s new token', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    await world.actor('bob');
    const bobs = await loginAs(world, 'bob');

    const { token } = await world.useCases.regenerateToken.execute(root, { username: 'bob' });

    expect((await world.useCases.authenticate.execute(token)).user.username).toBe('bob');
    expect(await rejectionOf(world.useCases.authenticate.execute(bobs))).toBeInstanceOf(NotAuthenticated);
    expect(world.tokenHashesOf('root')).toEqual([root.tokenHash]);
  });

  it('with a username, a regular user is Forbidden and nothing is revoked', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');

    expect(await rejectionOf(world.useCases.regenerateToken.execute(alice, { username: 'bob' }))).toBeInstanceOf(Forbidden);
    expect(await rejectionOf(world.useCases.regenerateToken.execute(alice, { username: 'nobody' }))).toBeInstanceOf(Forbidden);
    expect(world.tokenHashesOf('bob')).toEqual([bob.tokenHash]);
  });

  it('with their own username, a regular user regenerates their own token', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const { token } = await world.useCases.regenerateToken.execute(alice, { username: 'alice' });

    expect(world.tokenHashesOf('alice')).toEqual([`h:${token}`]);
  });

  it('with an unknown username, an administrator gets NotFound', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });

    expect(await rejectionOf(world.useCases.regenerateToken.execute(root, { username: 'nobody' }))).toBeInstanceOf(NotFound);
  });

  it('with all=true, an administrator revokes every token and gets their own new one', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    await world.actor('alice');
    await world.actor('bob');

    const { token } = await world.useCases.regenerateToken.execute(root, { all: 'true' });

    expect(world.uow.snapshot().tokens.map((t) => t.hash)).toEqual([`h:${token}`]);
    expect((await world.useCases.authenticate.execute(token)).user.username).toBe('root');
  });

  it('with all=true, a regular user is Forbidden and every token survives', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.actor('bob');
    const before = world.uow.snapshot().tokens;

    expect(await rejectionOf(world.useCases.regenerateToken.execute(alice, { all: 'true' }))).toBeInstanceOf(Forbidden);
    expect(world.uow.snapshot().tokens).toEqual(before);
  });

  it('with all=false, regenerates only the caller\'s token', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');

    const { token } = await world.useCases.regenerateToken.execute(alice, { all: 'false' });

    expect(world.tokenHashesOf('alice')).toEqual([`h:${token}`]);
    expect(world.tokenHashesOf('bob')).toEqual([bob.tokenHash]);
  });

  it('refuses an "all" that is neither a string nor a boolean', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });

    const error = await rejectionOf(world.useCases.regenerateToken.execute(root, { all: 1 }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(Object.keys(error.fields ?? {})).toEqual(['all']);
  });
});
