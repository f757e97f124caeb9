import type {
  App,
  Build,
  Certificate,
  Config,
  Container,
  Domain,
  Key,
  Release,
  Token,
  User,
} from '../model/entities';
import { FakeSecretBox } from './crypto-fakes';
import { FAKE_NOW, SequentialIdGenerator } from './deterministic';
import { isBase64 } from './encoding';
import {
  FAKE_CERT_EXPIRES,
  FAKE_CERT_ISSUER,
  FAKE_CERT_STARTS,
  fakeCertificateFingerprint,
  fakeCertificatePem,
  fakePrivateKeyPem,
} from './fake-certificate-parser';
import { fakeFingerprint, fakePublicKey } from './fake-public-key-parser';

/*
 * Builders of valid entities for tests: alice owns myapp, everything was created at
 * FAKE_NOW. Each call returns a fresh object; uuids come from their own namespace
 * (`b0000000-...`) so they never collide with a test's SequentialIdGenerator.
 */

const ids = new SequentialIdGenerator({ namespace: 0xb0000000 });
const at = (): Date => new Date(FAKE_NOW);
let keySeed = 0;

/** The password whose fake hash aUser stores, for logging in with FakePasswordHasher. */
export const BUILDER_PASSWORD = 'secret';

/** A regular active user, `alice` with id 1 unless overridden; the email follows the username. */
export function aUser(overrides: Partial<User> = {}): User {
  const username = overrides.username ?? 'alice';
  return {
    id: 1,
    username,
    email: `${username}@example.com`,
    firstName: '',
    lastName: '',
    passwordHash: `fake:${BUILDER_PASSWORD}`,
    isSuperuser: false,
    isStaff: false,
    isActive: true,
    lastLogin: null,
    dateJoined: at(),
    ...overrides,
  };
}

/** A token of alice that never expires, stored under the FakeTokenGenerator hash of its default token. */
export function aToken(overrides: Partial<Token> = {}): Token {
  return { hash: `h:${'0'.repeat(39)}1`, username: 'alice', created: at(), expires: null, ...overrides };
}

/** `myapp`, owned by alice, not scaled yet. */
export function anApp(overrides: Partial<App> = {}): App {
  return { uuid: ids.uuid(), id: 'myapp', owner: 'alice', structure: {}, created: at(), updated: at(), ...overrides };
}

/** An empty config of myapp. */
export function aConfig(overrides: Partial<Config> = {}): Config {
  return {
    uuid: ids.uuid(),
    app: 'myapp',
    owner: 'alice',
    values: {},
    memory: {},
    cpu: {},
    tags: {},
    created: at(),
    updated: at(),
    ...overrides,
  };
}

/** An image build of myapp with no Procfile. */
export function aBuild(overrides: Partial<Build> = {}): Build {
  return {
    uuid: ids.uuid(),
    app: 'myapp',
    owner: 'alice',
    image: 'example/myapp:v1',
    dockerfile: '',
    procfile: {},
    sha: '',
    workdir: null,
    created: at(),
    updated: at(),
    ...overrides,
  };
}

/** Release v1 of myapp, without a build, pointing at a fresh config uuid. */
export function aRelease(overrides: Partial<Release> = {}): Release {
  return {
    uuid: ids.uuid(),
    app: 'myapp',
    owner: 'alice',
    version: 1,
    build: null,
    config: ids.uuid(),
    summary: 'alice created initial release',
    created: at(),
    updated: at(),
    ...overrides,
  };
}

/** Container web.1 of myapp on release 1, up. */
export function aContainer(overrides: Partial<Container> = {}): Container {
  return {
    uuid: ids.uuid(),
    app: 'myapp',
    owner: 'alice',
    release: 1,
    type: 'web',
    num: 1,
    state: 'up',
    created: at(),
    updated: at(),
    ...overrides,
  };
}

/** `www.example.com` routed to myapp. */
export function aDomain(overrides: Partial<Domain> = {}): Domain {
  return { uuid: ids.uuid(), app: 'myapp', domain: 'www.example.com', owner: 'alice', created: at(), updated: at(), ...overrides };
}

/**
 * Key `alice@laptop` of alice. Each call gets different key material unless `public` is
 * given; the fingerprint is the one FakePublicKeyParser computes for the material.
 */
export function aKey(overrides: Partial<Key> = {}): Key {
  const publicKey = overrides.public ?? fakePublicKey(`builder-${++keySeed}`, 'alice@laptop');
  const material = publicKey.trim().split(/[ \t]+/)[1] ?? '';
  return {
    uuid: ids.uuid(),
    id: 'alice@laptop',
    public: publicKey,
    fingerprint: fakeFingerprint(isBase64(material) ? material : publicKey),
    owner: 'alice',
    created: at(),
    updated: at(),
    ...overrides,
  };
}

/**
 * Certificate 1 of alice for `www.example.com`, in the FakeCertificateParser format, with
 * its key sealed by FakeSecretBox. The PEM, SAN and fingerprint follow `commonName`
 * unless given.
 */
export function aCertificate(overrides: Partial<Certificate> = {}): Certificate {
  const commonName = overrides.commonName ?? 'www.example.com';
  const san = overrides.san ?? [commonName];
  const starts = overrides.starts ?? new Date(FAKE_CERT_STARTS);
  const expires = overrides.expires ?? new Date(FAKE_CERT_EXPIRES);
  const issuer = overrides.issuer ?? FAKE_CERT_ISSUER;
  const certificate = overrides.certificate ?? fakeCertificatePem({ cn: commonName, san, issuer, starts, expires });
  return {
    id: 1,
    commonName,
    owner: 'alice',
    certificate,
    sealedKey: new FakeSecretBox().seal(fakePrivateKeyPem(commonName)),
    san,
    fingerprint: fakeCertificateFingerprint(certificate),
    issuer,
    starts,
    expires,
    created: at(),
    updated: at(),
    ...overrides,
  };
}
