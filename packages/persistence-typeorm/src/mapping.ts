import type {
  App,
  Build,
  Certificate,
  Config,
  Container,
  ContainerState,
  Domain,
  Key,
  NewCertificate,
  NewUser,
  Release,
  Token,
  User,
} from '@svc/core';
import type {
  AppRow,
  BuildRow,
  CertificateRow,
  ConfigRow,
  ContainerRow,
  DomainRow,
  KeyRow,
  ReleaseRow,
  TokenRow,
  UserRow,
} from './schema';

/*
 * Explicit conversions between rows and core entities. Dates and JSON values are copied so
 * that a caller can never alias what a repository holds or returns.
 */

const copyDate = (date: Date): Date => new Date(date.getTime());
const copyOptionalDate = (date: Date | null): Date | null => (date === null ? null : copyDate(date));
const copyRecord = <V>(record: Record<string, V>): Record<string, V> => ({ ...record });

/** A user from its row. */
export function toUser(row: UserRow): User {
  return {
    id: row.id,
    username: row.username,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    passwordHash: row.password_hash,
    isSuperuser: row.is_superuser,
    isStaff: row.is_staff,
    isActive: row.is_active,
    lastLogin: copyOptionalDate(row.last_login),
    dateJoined: copyDate(row.date_joined),
  };
}

/** The columns of a user, without the generated id. */
export function fromUser(user: NewUser): Omit<UserRow, 'id'> {
  return {
    username: user.username,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    password_hash: user.passwordHash,
    is_superuser: user.isSuperuser,
    is_staff: user.isStaff,
    is_active: user.isActive,
    last_login: copyOptionalDate(user.lastLogin),
    date_joined: copyDate(user.dateJoined),
  };
}

/** A token from its row. */
export function toToken(row: TokenRow): Token {
  return { hash: row.hash, username: row.username, created: copyDate(row.created), expires: copyOptionalDate(row.expires) };
}

/** The row of a token. */
export function fromToken(token: Token): TokenRow {
  return {
    hash: token.hash,
    username: token.username,
    created: copyDate(token.created),
    expires: copyOptionalDate(token.expires),
  };
}

/** An app from its row. */
export function toApp(row: AppRow): App {
  return {
    uuid: row.uuid,
    id: row.id,
    owner: row.owner,
    structure: copyRecord(row.structure),
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of an app. */
export function fromApp(app: App): AppRow {
  return {
    uuid: app.uuid,
    id: app.id,
    owner: app.owner,
    structure: copyRecord(app.structure),
    created: copyDate(app.created),
    updated: copyDate(app.updated),
  };
}

/** A config from its row. */
export function toConfig(row: ConfigRow): Config {
  return {
    uuid: row.uuid,
    app: row.app,
    owner: row.owner,
    values: copyRecord(row.values),
    memory: copyRecord(row.memory),
    cpu: copyRecord(row.cpu),
    tags: copyRecord(row.tags),
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of a config. */
export function fromConfig(config: Config): ConfigRow {
  return {
    uuid: config.uuid,
    app: config.app,
    owner: config.owner,
    values: copyRecord(config.values),
    memory: copyRecord(config.memory),
    cpu: copyRecord(config.cpu),
    tags: copyRecord(config.tags),
    created: copyDate(config.created),
    updated: copyDate(config.updated),
  };
}

/** A build from its row. */
export function toBuild(row: BuildRow): Build {
  return {
    uuid: row.uuid,
    app: row.app,
    owner: row.owner,
    image: row.image,
    dockerfile: row.dockerfile,
    procfile: copyRecord(row.procfile),
    sha: row.sha,
    workdir: row.workdir ?? null,
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of a build. */
export function fromBuild(build: Build): BuildRow {
  return {
    uuid: build.uuid,
    app: build.app,
    owner: build.owner,
    image: build.image,
    dockerfile: build.dockerfile,
    procfile: copyRecord(build.procfile),
    sha: build.sha,
    workdir: build.workdir ?? null,
    created: copyDate(build.created),
    updated: copyDate(build.updated),
  };
}

/** A release from its row. */
export function toRelease(row: ReleaseRow): Release {
  return {
    uuid: row.uuid,
    app: row.app,
    owner: row.owner,
    version: row.version,
    build: row.build,
    config: row.config,
    summary: row.summary,
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of a release. */
export function fromRelease(release: Release): ReleaseRow {
  return {
    uuid: release.uuid,
    app: release.app,
    owner: release.owner,
    version: release.version,
    build: release.build,
    config: release.config,
    summary: release.summary,
    created: copyDate(release.created),
    updated: copyDate(release.updated),
  };
}

/** A container from its row. */
export function toContainer(row: ContainerRow): Container {
  return {
    uuid: row.uuid,
    app: row.app,
    owner: row.owner,
    release: row.release,
    type: row.type,
    num: row.num,
    // Only the core writes this column, always with one of its states.
    state: row.state as ContainerState,
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of a container. */
export function fromContainer(container: Container): ContainerRow {
  return {
    uuid: container.uuid,
    app: container.app,
    owner: container.owner,
    release: container.release,
    type: container.type,
    num: container.num,
    state: container.state,
    created: copyDate(container.created),
    updated: copyDate(container.updated),
  };
}

/** A domain from its row. */
export function toDomain(row: DomainRow): Domain {
  return {
    uuid: row.uuid,
    app: row.app,
    domain: row.domain,
    owner: row.owner,
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of a domain. */
export function fromDomain(domain: Domain): DomainRow {
  return {
    uuid: domain.uuid,
    app: domain.app,
    domain: domain.domain,
    owner: domain.owner,
    created: copyDate(domain.created),
    updated: copyDate(domain.updated),
  };
}

/** A key from its row. */
export function toKey(row: KeyRow): Key {
  return {
    uuid: row.uuid,
    id: row.id,
    public: row.public,
    fingerprint: row.fingerprint,
    owner: row.owner,
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The row of a key. */
export function fromKey(key: Key): KeyRow {
  return {
    uuid: key.uuid,
    id: key.id,
    owner: key.owner,
    public: key.public,
    fingerprint: key.fingerprint,
    created: copyDate(key.created),
    updated: copyDate(key.updated),
  };
}

/** A certificate from its row. */
export function toCertificate(row: CertificateRow): Certificate {
  return {
    id: row.id,
    commonName: row.common_name,
    owner: row.owner,
    certificate: row.certificate,
    sealedKey: row.sealed_key,
    san: [...row.san],
    fingerprint: row.fingerprint,
    issuer: row.issuer,
    starts: copyDate(row.starts),
    expires: copyDate(row.expires),
    created: copyDate(row.created),
    updated: copyDate(row.updated),
  };
}

/** The columns of a certificate, without the generated id. */
export function fromCertificate(certificate: NewCertificate): Omit<CertificateRow, 'id'> {
  return {
    common_name: certificate.commonName,
    owner: certificate.owner,
    certificate: certificate.certificate,
    sealed_key: certificate.sealedKey,
    san: [...certificate.san],
    fingerprint: certificate.fingerprint,
    issuer: certificate.issuer,
    starts: copyDate(certificate.starts),
    expires: copyDate(certificate.expires),
    created: copyDate(certificate.created),
    updated: copyDate(certificate.updated),
  };
}
