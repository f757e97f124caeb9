import {
  AlreadyExists,
  Forbidden,
  NotAuthenticated,
  Throttled,
  ValidationFailed,
} from '@svc/core';
import { BUILDER_PASSWORD } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const REGISTRATION = { username: 'alice', password: 'pw-alice', email: 'alice@example.com' };
const INVALID_CREDENTIALS = { non_field_errors: ['Unable to log in with provided credentials.'] };

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
