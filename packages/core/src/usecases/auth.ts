import {
  AlreadyExists,
  Forbidden,
  NotAuthenticated,
  NotFound,
  RequestRejected,
  Throttled,
  ValidationFailed,
  Conflict,
} from '../errors';
import type { User } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import { assertPageExists, sliceOf } from '../model/pagination';
import type { Repositories } from '../ports/repositories';
import { isAdmin } from '../rules/apps';
import { FieldErrorCollector, bodyObject, optionalString, requiredString } from '../rules/fields';
import { journalsFailedLogin, loginRetryAfterSeconds, throttleAddress } from '../rules/login-throttle';
import { checkNewPassword, parseRegistration } from '../rules/users';
import { policyFor, type ApiVersion } from '../version/policy';
import { requireAdmin, type Actor, type CoreDependencies, type RequestContext } from './context';
import { journal } from './journal';

/** The answer to a failed login, the same for an unknown user and a wrong password. */
export const INVALID_CREDENTIALS = 'Unable to log in with provided credentials.';
/** The password hashed once per Login to verify against when the user does not exist. */
const TIMING_DECOY = 'timing decoy: no account has this password hash';

async function mintToken(
  deps: Pick<CoreDependencies, 'tokens' | 'clock' | 'settings'>,
  repos: Repositories,
  username: string,
): Promise<string> {
  const token = deps.tokens.generate();
  const now = deps.clock.now();
  const ttl = deps.settings.tokenTtlSeconds;
  await repos.tokens.add({
    hash: deps.tokens.hash(token),
    username,
    created: now,
    expires: ttl === null ? null : new Date(now.getTime() + ttl * 1000),
  });
  return token;
}

async function findUser(repos: Repositories, username: string): Promise<User> {
  const user = await repos.users.findByUsername(username);
  if (!user) throw new NotFound('USER.NOT_FOUND');
  return user;
}

/** Registers a user; the first user while no administrator exists becomes one. */
export class RegisterUser {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'passwords' | 'clock' | 'ids' | 'settings'>) {}

  /**
   * @throws Forbidden when registration is disabled, or admin-only and the caller is not an
   *   administrator (while no administrator exists, admin-only lets the first one register).
   * @throws ValidationFailed on invalid fields; AlreadyExists('username').
   */
  async execute(body: unknown, caller: Actor | null, request?: RequestContext): Promise<User> {
    const mode = this.deps.settings.registrationMode;
    if (mode === 'disabled') throw new Forbidden('Registration is disabled', 'AUTH.REGISTRATION_DISABLED');
    const needsAdmin = mode === 'admin_only' && !(caller && isAdmin(caller.user));
    const adminOnly = () => new Forbidden('Only administrators can register users', 'AUTH.REGISTRATION_ADMIN_ONLY');
    if (needsAdmin && (await this.deps.uow.repositories.users.countAdmins()) > 0) throw adminOnly();
    const registration = parseRegistration(bodyObject(body));
    const passwordHash = await this.deps.passwords.hash(registration.password);
    return this.deps.uow.transaction(async (repos) => {
      const firstAdmin = (await repos.users.countAdmins()) === 0;
      // With no administrator yet, admin-only registration lets the first one in: otherwise
      // a new installation could never get one.
      if (needsAdmin && !firstAdmin) throw adminOnly();
      if (await repos.users.findByUsername(registration.username)) throw new AlreadyExists('username');
      const author = caller ?? { username: registration.username, request };
      await journal(repos, this.deps, author, { action: 'user.create', target: registration.username, summary: `${registration.username} was registered` });
      return repos.users.create({
        username: registration.username,
        email: registration.email,
        firstName: registration.firstName,
        lastName: registration.lastName,
        passwordHash,
        isSuperuser: firstAdmin,
        isStaff: firstAdmin,
        isActive: true,
        lastLogin: null,
        dateJoined: this.deps.clock.now(),
      });
    });
  }
}

/**
 * Exchanges a username and password for a new token. Failures are throttled per username
 * and client address with a growing wait (see loginRetryAfterSeconds), so that wrong
 * passwords sent from one address never keep the user out from another; they are journaled
 * to the account when it exists, a bounded number per client a minute (journalsFailedLogin).
 */
export class Login {
  /** A real hash of the hasher in use: verifying against it costs what verifying a user's does. */
  private decoyHash: Promise<string> | null = null;

  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'passwords' | 'tokens' | 'clock' | 'ids' | 'settings'>) {}

  /**
   * `address` is the client's (the HTTP adapter's `req.ip`); without one, all clients count as one.
   * @throws ValidationFailed for missing fields or wrong credentials (non_field_errors).
   * @throws Throttled while the address must wait after its recent failures for the username.
   */
  async execute(body: unknown, address = '', request?: RequestContext): Promise<{ token: string }> {
    const input = bodyObject(body);
    const errors = new FieldErrorCollector();
    const username = requiredString(errors, input, 'username', 1024);
    const password = requiredString(errors, input, 'password', 1024);
    errors.throwIfAny();

    const { uow, clock, settings } = this.deps;
    const now = clock.now();
    const windowMs = settings.loginFailureWindowSeconds * 1000;
    const client = throttleAddress(address);
    // A failure counts while it is less than a window old: one exactly `window` old has left it.
    const failures = await uow.repositories.loginFailures.recent(username!, new Date(now.getTime() - windowMs + 1));
    const wait = loginRetryAfterSeconds(failures, client, now, settings);
    if (wait > 0) throw new Throttled(wait);

    const user = await uow.repositories.users.findByUsername(username!);
    // An unknown user costs a full verification too, so timing does not tell who has an account.
    const hash = user?.passwordHash ?? (await (this.decoyHash ??= this.deps.passwords.hash(TIMING_DECOY)));
    const verified = await this.deps.passwords.verify(password!, hash);
    const matches = user !== null && verified;
    if (!user || !matches || !user.isActive) {
      await uow.transaction(async (repos) => {
        const lastMinute = await repos.loginFailures.recordCounting(username!, now, client, new Date(now.getTime() - 60_000 + 1));
        if (!journalsFailedLogin(user !== null, lastMinute)) return;
        await journal(repos, this.deps, { username: username!, request }, { action: 'user.login_failed', target: username!, summary: `failed login as ${username!}` });
      });
      throw new ValidationFailed({ non_field_errors: [INVALID_CREDENTIALS] });
    }
    return uow.transaction(async (repos) => {
      // Only this address's failures: the real user logging in must not wipe an attacker's wait.
      await repos.loginFailures.clear(user.username, client);
      await repos.users.update({ ...user, lastLogin: now });
      await journal(repos, this.deps, { username: user.username, request }, { action: 'user.login', target: user.username, summary: `${user.username} logged in` });
      return { token: await mintToken(this.deps, repos, user.username) };
    });
  }
}

/** Resolves a presented token to the caller. */
export class Authenticate {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'tokens' | 'clock'>) {}

  /** @throws NotAuthenticated when the token is unknown, expired, or its user is inactive. */
  async execute(token: string): Promise<Actor> {
    if (!/^[0-9a-f]{40}$/.test(token)) throw new NotAuthenticated();
    const hash = this.deps.tokens.hash(token);
    // One lookup for the token and its user: every authenticated request makes it.
    const found = await this.deps.uow.repositories.tokens.findWithUser(hash);
    if (!found) throw new NotAuthenticated();
    const { token: stored, user } = found;
    if (stored.expires && stored.expires.getTime() <= this.deps.clock.now().getTime()) throw new NotAuthenticated();
    if (!user.isActive) throw new NotAuthenticated();
    return { user, tokenHash: hash };
  }
}

/** Checks an administrator's own password when the API version requires it for acting on others. */
async function checkAdminPassword(
  passwords: CoreDependencies['passwords'],
  actor: Actor,
  password: string | undefined,
  required: boolean,
): Promise<void> {
  if (password === undefined) {
    if (required) throw ValidationFailed.field('password', 'This field is required.');
    return;
  }
  if (!(await passwords.verify(password, actor.user.passwordHash))) {
    throw new RequestRejected('AUTH.WRONG_PASSWORD', 'Current password does not match');
  }
}

/** Deletes the caller's account, or (administrators) another user's. */
export class CancelAccount {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'passwords' | 'clock' | 'ids'>) {}

  /**
   * @throws Forbidden when a non-administrator names another user; NotFound for an unknown user.
   * @throws Conflict while the user still owns applications.
   */
  async execute(actor: Actor, body: unknown, version: ApiVersion): Promise<void> {
    const input = bodyObject(body);
    const errors = new FieldErrorCollector();
    const username = optionalString(errors, input, 'username', 1024);
    const password = optionalString(errors, input, 'password', 1024);
    errors.throwIfAny();

    const other = username !== undefined && username !== actor.user.username;
    if (other) {
      requireAdmin(actor);
      await checkAdminPassword(this.deps.passwords, actor, password, policyFor(version).adminNeedsPasswordForOthers);
    }
    await this.deps.uow.transaction(async (repos) => {
      const target = other ? await findUser(repos, username!) : actor.user;
      if ((await repos.apps.countOwnedBy(target.username)) > 0) {
        throw new Conflict(
          'USER.OWNS_APPS',
          `${target.username} still owns applications; delete or transfer them first`,
        );
      }
      await repos.users.delete(target.username);
      await journal(repos, this.deps, actor, { action: 'user.delete', target: target.username, summary: `${actor.user.username} deleted the account of ${target.username}` });
    });
  }
}

/** Revokes tokens and mints a new one: the caller's, one user's, or everybody's. */
export class RegenerateToken {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'tokens' | 'clock' | 'ids' | 'settings'>) {}

  /** @throws Forbidden for a non-administrator naming a user or `all`; NotFound for an unknown user. */
  async execute(actor: Actor, body: unknown): Promise<{ token: string }> {
    const input = bodyObject(body);
    const errors = new FieldErrorCollector();
    const username = optionalString(errors, input, 'username', 1024);
    const all = input.all;
    if (all !== undefined && all !== null && typeof all !== 'string' && typeof all !== 'boolean') {
      errors.add('all', 'Must be "true" or "false".');
    }
    errors.throwIfAny();
    const everyone = all === true || (typeof all === 'string' && all.toLowerCase() === 'true');
    // Naming oneself is acting on oneself, as for passwd and cancel.
    const other = username !== undefined && username !== actor.user.username;

    if (everyone || other) requireAdmin(actor);
    return this.deps.uow.transaction(async (repos) => {
      const whose = everyone ? '*' : other ? username! : actor.user.username;
      await journal(repos, this.deps, actor, { action: 'token.regenerate', target: whose, summary: `${actor.user.username} regenerated the tokens of ${everyone ? 'every user' : whose}` });
      if (everyone) {
        await repos.tokens.deleteAll();
        return { token: await mintToken(this.deps, repos, actor.user.username) };
      }
      const target = other ? await findUser(repos, username!) : actor.user;
      await repos.tokens.deleteForUser(target.username);
      return { token: await mintToken(this.deps, repos, target.username) };
    });
  }
}

/** Changes the caller's password, or (administrators) another user's; revokes the user's other tokens. */
export class ChangePassword {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'passwords' | 'clock' | 'ids'>) {}

  /**
   * @throws ValidationFailed for missing fields; RequestRejected when the current password is wrong.
   * @throws Forbidden for a non-administrator naming another user; NotFound for an unknown user.
   */
  async execute(actor: Actor, body: unknown, version: ApiVersion): Promise<void> {
    const input = bodyObject(body);
    const errors = new FieldErrorCollector();
    const username = optionalString(errors, input, 'username', 1024);
    const other = username !== undefined && username !== actor.user.username;
    const password = other
      ? optionalString(errors, input, 'password', 1024)
      : requiredString(errors, input, 'password', 1024);
    const newPassword = checkNewPassword(errors, input);
    errors.throwIfAny();

    if (other) {
      requireAdmin(actor);
      await checkAdminPassword(this.deps.passwords, actor, password, policyFor(version).adminNeedsPasswordForOthers);
    } else if (!(await this.deps.passwords.verify(password!, actor.user.passwordHash))) {
      throw new RequestRejected('AUTH.WRONG_PASSWORD', 'Current password does not match');
    }
    const passwordHash = await this.deps.passwords.hash(newPassword!);
    await this.deps.uow.transaction(async (repos) => {
      const target = other ? await findUser(repos, username!) : actor.user;
      await repos.users.update({ ...target, passwordHash });
      if (other) await repos.tokens.deleteForUser(target.username);
      else await repos.tokens.deleteForUserExcept(target.username, actor.tokenHash);
      await journal(repos, this.deps, actor, { action: 'user.password', target: target.username, summary: `${actor.user.username} changed the password of ${target.username}` });
    });
  }
}

/** Lists every user (administrators only). */
export class ListUsers {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws Forbidden for non-administrators; NotFound for a page past the end. */
  async execute(actor: Actor, page: PageRequest): Promise<Page<User>> {
    requireAdmin(actor);
    const result = await this.deps.uow.repositories.users.list(sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** Lists the administrators (administrators only). */
export class ListAdmins {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws Forbidden for non-administrators; NotFound for a page past the end. */
  async execute(actor: Actor, page: PageRequest): Promise<Page<User>> {
    requireAdmin(actor);
    const result = await this.deps.uow.repositories.users.listAdmins(sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** Makes a user an administrator. */
export class GrantAdmin {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids'>) {}

  /** @throws Forbidden for non-administrators; ValidationFailed without username; NotFound for an unknown user. */
  async execute(actor: Actor, body: unknown): Promise<void> {
    requireAdmin(actor);
    const errors = new FieldErrorCollector();
    const username = requiredString(errors, bodyObject(body), 'username', 1024);
    errors.throwIfAny();
    await this.deps.uow.transaction(async (repos) => {
      const user = await findUser(repos, username!);
      await repos.users.update({ ...user, isSuperuser: true, isStaff: true });
      await journal(repos, this.deps, actor, { action: 'admin.grant', target: user.username, summary: `${actor.user.username} made ${user.username} an administrator` });
    });
  }
}

/** Takes administrative privileges from a user; the last administrator keeps them. */
export class RevokeAdmin {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids'>) {}

  /** @throws Forbidden for non-administrators; NotFound for an unknown user; Conflict for the last administrator. */
  async execute(actor: Actor, username: string): Promise<void> {
    requireAdmin(actor);
    await this.deps.uow.transaction(async (repos) => {
      const user = await findUser(repos, username);
      if (!user.isSuperuser) return;
      if ((await repos.users.countAdmins()) <= 1) {
        throw new Conflict('USER.LAST_ADMIN', 'The last administrator cannot be revoked.');
      }
      await repos.users.update({ ...user, isSuperuser: false, isStaff: false });
      await journal(repos, this.deps, actor, { action: 'admin.revoke', target: user.username, summary: `${actor.user.username} revoked the administrator rights of ${user.username}` });
    });
  }
}
