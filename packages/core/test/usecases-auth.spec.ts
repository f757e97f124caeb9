import {
  AlreadyExists,
  Conflict,
  Forbidden,
  NotAuthenticated,
  NotFound,
  RequestRejected,
  Throttled,
  ValidationFailed,
} from '@svc/core';
import type { Actor } from '@svc/core';
import { BUILDER_PASSWORD, aCertificate, aKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const REGISTRATION = { username: 'alice', password: 'pw-alice', email: 'alice@example.com' };
const INVALID_CREDENTIALS = { non_field_errors: ['Unable to log in with provided credentials.'] };
const PAGE = { page: 1, pageSize: 100 };

describe('RegisterUser', () => {
  it('makes the first user an administrator (superuser and staff), stamped with the clock, never logged in', async () => {
    const world = new World();

    const alice = await world.useCases.registerUser.execute(REGISTRATION, null);

    expect(alice).toMatchObject({
      username: 'alice',
      email: 'alice@example.com',
      isSuperuser: true,
      isStaff: true,
      isActive: true,
      lastLogin: null,
      dateJoined: world.clock.now(),
    });
  });

  it('makes later users regular users, whatever is_superuser/is_staff the body claims', async () => {
    const world = new World();
    await world.useCases.registerUser.execute(REGISTRATION, null);

    const bob = await world.useCases.registerUser.execute(
      { username: 'bob', password: 'pw', email: 'bob@example.com', is_superuser: true, is_staff: true },
      null,
    );

    expect(bob.isSuperuser).toBe(false);
    expect(bob.isStaff).toBe(false);
  });

  it('makes a user an administrator while only regular users exist', async () => {
    const world = new World();
    await world.actor('bob');

    const alice = await world.useCases.registerUser.execute(REGISTRATION, null);

    expect(alice.isSuperuser).toBe(true);
  });

  it('stores the password hashed, never in plain text', async () => {
    const world = new World();

    await world.useCases.registerUser.execute(REGISTRATION, null);

    const stored = world.uow.snapshot().users[0];
    expect(stored?.passwordHash).toBe('fake:pw-alice');
    expect(JSON.stringify(world.uow.snapshot())).not.toContain('"pw-alice"');
  });

  it('refuses a taken username with AlreadyExists on username, keeping one user', async () => {
    const world = new World();
    await world.useCases.registerUser.execute(REGISTRATION, null);

    const error = await rejectionOf(world.useCases.registerUser.execute({ ...REGISTRATION, email: 'other@example.com' }, null));

    expect(error).toBeInstanceOf(AlreadyExists);
    expect(error.fields).toEqual({ username: ['This field must be unique.'] });
    expect(world.uow.snapshot().users).toHaveLength(1);
  });

  it('refuses invalid fields all at once and stores nothing', async () => {
    const world = new World();

    const error = await rejectionOf(world.useCases.registerUser.execute({ username: 'bad name', email: 'nope' }, null));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(Object.keys(error.fields ?? {}).sort()).toEqual(['email', 'password', 'username']);
    expect(world.uow.snapshot().users).toEqual([]);
  });

  it('refuses everyone when registration is disabled, with "Registration is disabled"', async () => {
    const world = new World({ registrationMode: 'disabled' });
    const admin = await world.actor('root', { admin: true });

    for (const caller of [null, admin]) {
      const error = await rejectionOf(world.useCases.registerUser.execute(REGISTRATION, caller));
      expect(error).toBeInstanceOf(Forbidden);
      expect(error.message).toBe('Registration is disabled');
    }
    expect(world.uow.snapshot().users.map((u) => u.username)).toEqual(['root']);
  });

  it('in admin_only mode refuses anonymous and regular callers, and registers for an administrator', async () => {
    const world = new World({ registrationMode: 'admin_only' });
    const admin = await world.actor('root', { admin: true });
    const bob = await world.actor('bob');

    expect(await rejectionOf(world.useCases.registerUser.execute(REGISTRATION, null))).toBeInstanceOf(Forbidden);
    expect(await rejectionOf(world.useCases.registerUser.execute(REGISTRATION, bob))).toBeInstanceOf(Forbidden);
    const alice = await world.useCases.registerUser.execute(REGISTRATION, admin);

    expect(alice.username).toBe('alice');
    expect(alice.isSuperuser).toBe(false);
  });
});

describe('RegisterUser in admin_only mode on a new installation', () => {
  it('lets the first user register (as administrator) while no administrator exists, then refuses anonymous callers', async () => {
    const world = new World({ registrationMode: 'admin_only' });

    const first = await world.useCases.registerUser.execute(REGISTRATION, null);

    expect(first.isSuperuser).toBe(true);
    const second = { ...REGISTRATION, username: 'bob', email: 'bob@example.com' };
    expect(await rejectionOf(world.useCases.registerUser.execute(second, null))).toBeInstanceOf(Forbidden);
    expect(world.uow.snapshot().users.map((u) => u.username)).toEqual(['alice']);
  });
});

describe('Login', () => {
  it('mints a token that authenticates as the user and records the login time', async () => {
    const world = new World();
    await world.actor('alice');
    world.clock.advanceSeconds(60);

    const { token } = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });

    expect(token).toMatch(/^[0-9a-f]{40}$/);
    const actor = await world.useCases.authenticate.execute(token);
    expect(actor.user.username).toBe('alice');
    expect(actor.user.lastLogin).toEqual(world.clock.now());
  });

  it('stores the token only as its hash', async () => {
    const world = new World();
    await world.actor('alice');

    const { token } = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });

    expect(world.tokenHashesOf('alice')).toContain(`h:${token}`);
    expect(world.tokenHashesOf('alice')).not.toContain(token);
  });

  it('gives a new token on every login and keeps the earlier ones valid', async () => {
    const world = new World();
    await world.actor('alice');

    const first = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });
    const second = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });

    expect(first.token).not.toBe(second.token);
    await expect(world.useCases.authenticate.execute(first.token)).resolves.toBeDefined();
    await expect(world.useCases.authenticate.execute(second.token)).resolves.toBeDefined();
  });

  it('answers a wrong password and an unknown user with the same error', async () => {
    const world = new World();
    await world.actor('alice');

    const wrong = await rejectionOf(world.useCases.login.execute({ username: 'alice', password: 'nope' }));
    const unknown = await rejectionOf(world.useCases.login.execute({ username: 'nobody', password: BUILDER_PASSWORD }));

    expect(wrong).toBeInstanceOf(ValidationFailed);
    expect(wrong.fields).toEqual(INVALID_CREDENTIALS);
    expect(unknown).toBeInstanceOf(ValidationFailed);
    expect(unknown.fields).toEqual(INVALID_CREDENTIALS);
    expect(unknown.message).toBe(wrong.message);
  });

  it('refuses an inactive user with the invalid-credentials error', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.uow.repositories.users.update({ ...alice.user, isActive: false });

    const error = await rejectionOf(world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD }));

    expect(error.fields).toEqual(INVALID_CREDENTIALS);
  });

  it('reports each missing field', async () => {
    const world = new World();

    const error = await rejectionOf(world.useCases.login.execute({}));

    expect(error.fields).toEqual({ username: ['This field is required.'], password: ['This field is required.'] });
  });

  describe('throttling', () => {
    const ATTACKER = '203.0.113.66';
    const HOME = '198.51.100.7';

    async function failTimes(world: World, username: string, times: number, everySeconds = 0, address = ATTACKER): Promise<void> {
      for (let i = 0; i < times; i++) {
        await expect(world.useCases.login.execute({ username, password: 'wrong' }, address)).rejects.toBeInstanceOf(ValidationFailed);
        world.clock.advanceSeconds(everySeconds);
      }
    }

    const loginFrom = (world: World, address: string, password = BUILDER_PASSWORD) =>
      world.useCases.login.execute({ username: 'alice', password }, address);

    it('lets one address fail 10 times, then makes it wait 30 s, even with the right password, and mints no token', async () => {
      const world = new World();
      await world.actor('alice');
      await failTimes(world, 'alice', 10);
      const tokensBefore = world.tokenHashesOf('alice');

      const error = await rejectionOf(loginFrom(world, ATTACKER));

      expect(error).toBeInstanceOf(Throttled);
      expect((error as Throttled).retryAfterSeconds).toBe(30);
      expect(world.tokenHashesOf('alice')).toEqual(tokensBefore);
    });

    it('does not throttle after 9 failures', async () => {
      const world = new World();
      await world.actor('alice');
      await failTimes(world, 'alice', 9);

      await expect(loginFrom(world, ATTACKER)).resolves.toHaveProperty('token');
    });

    it('10 wrong passwords from one address do not keep the real user out from another', async () => {
      const world = new World();
      await world.actor('alice');
      await failTimes(world, 'alice', 10);

      await expect(loginFrom(world, HOME)).resolves.toHaveProperty('token');
      // ... and her login does not give the attacker's address its attempts back.
      expect(await rejectionOf(loginFrom(world, ATTACKER, 'wrong'))).toBeInstanceOf(Throttled);
    });

    it('doubles the wait with each further failure, up to the maximum', async () => {
      const world = new World({ loginBackoffMaxSeconds: 200 });
      await world.actor('alice');
      await failTimes(world, 'alice', 10);
      const waits: number[] = [];
      for (let i = 0; i < 5; i++) {
        const error = (await rejectionOf(loginFrom(world, ATTACKER, 'wrong'))) as Throttled;
        waits.push(error.retryAfterSeconds);
        world.clock.advanceSeconds(error.retryAfterSeconds);
        await expect(loginFrom(world, ATTACKER, 'wrong')).rejects.toBeInstanceOf(ValidationFailed);
      }
      expect(waits).toEqual([30, 60, 120, 200, 200]);
    });

    it('lets a client that waited exactly Retry-After in, and still throttles one second before', async () => {
      const world = new World();
      await world.actor('alice');
      await failTimes(world, 'alice', 10, 10);
      world.clock.advanceSeconds(5);

      const error = (await rejectionOf(loginFrom(world, ATTACKER))) as Throttled;
      // The last failure was 15 s ago, the first wait is 30 s.
      expect(error.retryAfterSeconds).toBe(15);
      world.clock.advanceSeconds(14);
      expect(((await rejectionOf(loginFrom(world, ATTACKER))) as Throttled).retryAfterSeconds).toBe(1);
      world.clock.advanceSeconds(1);

      await expect(loginFrom(world, ATTACKER)).resolves.toHaveProperty('token');
    });

    it('does not count failures older than the window', async () => {
      const world = new World();
      await world.actor('alice');
      await failTimes(world, 'alice', 5);
      world.clock.advanceSeconds(16 * 60);
      await failTimes(world, 'alice', 9);

      await expect(loginFrom(world, ATTACKER)).resolves.toHaveProperty('token');
    });

    it('throttles per username: another user still logs in from the same address', async () => {
      const world = new World();
      await world.actor('alice');
      await world.actor('bob');
      await failTimes(world, 'alice', 10);

      await expect(world.useCases.login.execute({ username: 'bob', password: BUILDER_PASSWORD }, ATTACKER)).resolves.toHaveProperty('token');
    });

    it('throttles unknown usernames too, so guessing names is no faster', async () => {
      const world = new World();
      await failTimes(world, 'ghost', 10);

      expect(await rejectionOf(world.useCases.login.execute({ username: 'ghost', password: 'x' }, ATTACKER))).toBeInstanceOf(Throttled);
    });

    it("forgets the address's earlier failures after a successful login from it", async () => {
      const world = new World();
      await world.actor('alice');
      await failTimes(world, 'alice', 9);
      await loginFrom(world, ATTACKER);
      await failTimes(world, 'alice', 9);

      await expect(loginFrom(world, ATTACKER)).resolves.toHaveProperty('token');
    });

    it('past the per-username limit, every address waits from its first failure, but a fresh one still gets its attempt', async () => {
      const world = new World({ loginUsernameFailureLimit: 20 });
      await world.actor('alice');
      for (let i = 0; i < 20; i++) await failTimes(world, 'alice', 1, 0, `192.0.2.${i + 1}`);

      await failTimes(world, 'alice', 1, 0, '192.0.2.200');
      expect(((await rejectionOf(world.useCases.login.execute({ username: 'alice', password: 'x' }, '192.0.2.200'))) as Throttled).retryAfterSeconds).toBe(30);
      await expect(loginFrom(world, HOME)).resolves.toHaveProperty('token');
    });

    it('counts an IPv6 client by its /64 and an IPv4-mapped address as IPv4', async () => {
      const world = new World({ loginFailureLimit: 2 });
      await world.actor('alice');
      await failTimes(world, 'alice', 1, 0, '2001:db8:1:2::10');
      await failTimes(world, 'alice', 1, 0, '2001:db8:1:2:ffff::1');
      expect(await rejectionOf(loginFrom(world, '2001:0db8:0001:0002::99'))).toBeInstanceOf(Throttled);
      await expect(loginFrom(world, '2001:db8:1:3::1')).resolves.toHaveProperty('token');

      await failTimes(world, 'alice', 2, 0, '::ffff:192.0.2.9');
      expect(await rejectionOf(loginFrom(world, '192.0.2.9'))).toBeInstanceOf(Throttled);
    });

    it('follows the configured limit and first wait', async () => {
      const world = new World({ loginFailureLimit: 3, loginBackoffSeconds: 7 });
      await world.actor('alice');
      await failTimes(world, 'alice', 3);

      const error = (await rejectionOf(loginFrom(world, ATTACKER))) as Throttled;
      expect(error).toBeInstanceOf(Throttled);
      expect(error.retryAfterSeconds).toBe(7);
    });
  });

  describe('token lifetime', () => {
    it('a token expires TOKEN_TTL_SECONDS after login', async () => {
      const world = new World({ tokenTtlSeconds: 3600 });
      await world.actor('alice');
      const { token } = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });

      world.clock.advanceSeconds(3599);
      await expect(world.useCases.authenticate.execute(token)).resolves.toBeDefined();
      world.clock.advanceSeconds(1);
      expect(await rejectionOf(world.useCases.authenticate.execute(token))).toBeInstanceOf(NotAuthenticated);
    });

    it('without a TTL a token does not expire', async () => {
      const world = new World();
      await world.actor('alice');
      const { token } = await world.useCases.login.execute({ username: 'alice', password: BUILDER_PASSWORD });

      world.clock.advanceSeconds(10 * 365 * 24 * 3600);

      await expect(world.useCases.authenticate.execute(token)).resolves.toBeDefined();
    });
  });
});

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
