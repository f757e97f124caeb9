/// <reference types="jest" />
import { AlreadyExists, DomainError, ReleaseVersionTaken } from '../../errors';
import type {
  App,
  Build,
  Certificate,
  Config,
  Container,
  Domain,
  Key,
  NewCertificate,
  NewUser,
  Release,
  Token,
  User,
} from '../../model/entities';
import type { Repositories, UnitOfWork } from '../../ports/repositories';

/** What a contract suite needs from a store: a unit of work and a way to release it. */
export interface OpenedStore {
  uow: UnitOfWork;
  close(): Promise<void>;
}

/** Opens a fresh, empty store; each test gets its own. */
export type OpenStore = () => Promise<OpenedStore>;

/**
 * Registers hooks that open a fresh store before each test and close it after, and returns
 * an accessor for the current unit of work.
 */
export function useStore(open: OpenStore): () => UnitOfWork {
  let current: OpenedStore | undefined;
  beforeEach(async () => {
    current = await open();
  });
  afterEach(async () => {
    const opened = current;
    current = undefined;
    await opened?.close();
  });
  return () => {
    if (current === undefined) throw new Error('The store is only open while a test runs');
    return current.uow;
  };
}

// Millisecond parts on purpose: a store that drops them fails the round-trip tests.
const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 123);

/** A fixed instant `seconds` (and `ms`) after the suite's base time. */
export function at(seconds: number, ms = 0): Date {
  return new Date(BASE + seconds * 1000 + ms);
}

let sequence = 0;

/** A fresh, well-formed UUID (v4 layout), unique within the process. */
export function nextUuid(): string {
  sequence += 1;
  return `00000000-0000-4000-8000-${sequence.toString(16).padStart(12, '0')}`;
}

/** A user ready to be created. */
export function aUser(username: string, overrides: Partial<NewUser> = {}): NewUser {
  return {
    username,
    email: `${username}@example.com`,
    firstName: 'First',
    lastName: 'Last',
    passwordHash: `scrypt$salt$${username}`,
    isSuperuser: false,
    isStaff: false,
    isActive: true,
    lastLogin: null,
    dateJoined: at(0, 1),
    ...overrides,
  };
}

/** An app owned by `owner`. */
export function anApp(id: string, owner: string, overrides: Partial<App> = {}): App {
  return { uuid: nextUuid(), id, owner, structure: {}, created: at(1, 2), updated: at(1, 3), ...overrides };
}

/** A config of `app`. */
export function aConfig(app: string, owner: string, overrides: Partial<Config> = {}): Config {
  return {
    uuid: nextUuid(),
    app,
    owner,
    values: {},
    memory: {},
    cpu: {},
    tags: {},
    created: at(2, 4),
    updated: at(2, 5),
    ...overrides,
  };
}

/** A build of `app`. */
export function aBuild(app: string, owner: string, overrides: Partial<Build> = {}): Build {
  return {
    uuid: nextUuid(),
    app,
    owner,
    image: 'registry.example.com/app:1',
    dockerfile: '',
    procfile: {},
    sha: '',
    workdir: null,
    created: at(3, 6),
    updated: at(3, 7),
    ...overrides,
  };
}

/** Release `version` of `app`. */
export function aRelease(app: string, owner: string, version: number, overrides: Partial<Release> = {}): Release {
  return {
    uuid: nextUuid(),
    app,
    owner,
    version,
    build: null,
    config: nextUuid(),
    summary: `${owner} created release v${version}`,
    created: at(4 + version, 8),
    updated: at(4 + version, 9),
    ...overrides,
  };
}

/** A container of `app`. */
export function aContainer(app: string, owner: string, overrides: Partial<Container> = {}): Container {
  return {
    uuid: nextUuid(),
    app,
    owner,
    release: 1,
    type: 'web',
    num: 1,
    state: 'up',
    created: at(5, 10),
    updated: at(5, 11),
    ...overrides,
  };
}

/** A custom domain of `app`. */
export function aDomain(app: string, domain: string, owner: string, overrides: Partial<Domain> = {}): Domain {
  return { uuid: nextUuid(), app, domain, owner, created: at(6, 12), updated: at(6, 13), ...overrides };
}

/** An SSH key of `owner`; the material and fingerprint derive from `material`. */
export function aKey(owner: string, id: string, material = `${owner}-${id}`, overrides: Partial<Key> = {}): Key {
  return {
    uuid: nextUuid(),
    id,
    public: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5${material} ${owner}@host`,
    fingerprint: `SHA256:${material}`,
    owner,
    created: at(7, 14),
    updated: at(7, 15),
    ...overrides,
  };
}

/** A certificate of `owner` for `commonName`. */
export function aCertificate(
  owner: string,
  commonName: string,
  overrides: Partial<NewCertificate> = {},
): NewCertificate {
  return {
    commonName,
    owner,
    certificate: `-----BEGIN CERTIFICATE-----\n${commonName}\n-----END CERTIFICATE-----\n`,
    sealedKey: `sealed:${commonName}`,
    san: [commonName, `www.${commonName}`],
    fingerprint: `AB:CD:${commonName}`,
    issuer: '/CN=Example CA',
    starts: at(8, 16),
    expires: at(86400 * 90, 17),
    created: at(9, 18),
    updated: at(9, 19),
    ...overrides,
  };
}

/** A token of `username`. */
export function aToken(username: string, hash: string, overrides: Partial<Token> = {}): Token {
  return { hash, username, created: at(10, 20), expires: null, ...overrides };
}

/** Creates a user with default fields. */
export function seedUser(repos: Repositories, username: string, overrides: Partial<NewUser> = {}): Promise<User> {
  return repos.users.create(aUser(username, overrides));
}

/** Creates an app owned by `owner`, which must exist. */
export async function seedApp(repos: Repositories, id: string, owner: string, overrides: Partial<App> = {}): Promise<App> {
  const app = anApp(id, owner, overrides);
  await repos.apps.create(app);
  return app;
}

/** Creates a certificate and returns it with its id. */
export function seedCertificate(repos: Repositories, owner: string, commonName: string): Promise<Certificate> {
  return repos.certificates.create(aCertificate(owner, commonName));
}

/** Resolves with what `promise` rejects with; fails the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('Expected the operation to fail, but it succeeded');
}

/** Asserts that `promise` rejects with AlreadyExists on `field`. */
export async function expectAlreadyExists(promise: Promise<unknown>, field: string): Promise<void> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(AlreadyExists);
  expect((error as AlreadyExists).field).toBe(field);
  expect((error as AlreadyExists).fields).toEqual({ [field]: ['This field must be unique.'] });
}

/** Asserts that `promise` rejects with ReleaseVersionTaken. */
export async function expectVersionTaken(promise: Promise<unknown>): Promise<void> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(ReleaseVersionTaken);
  expect(DomainError.is(error) && error.code).toBe('RELEASE.VERSION_TAKEN');
}
