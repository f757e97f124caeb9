import {
  formatTimestamp,
  releaseEnvironment,
  type App,
  type AppTls,
  type Build,
  type Certificate,
  type Config,
  type Container,
  type Domain,
  type Key,
  type Release,
  type User,
} from '@svc/core';

/*
 * Response bodies, field by field as the API documents them: nothing from an entity reaches
 * a client unless it is named here (password hashes and sealed keys never are).
 */

/** The User JSON: account timestamps in ISO 8601 with milliseconds. */
export function presentUser(user: User): Record<string, unknown> {
  return {
    id: user.id,
    last_login: user.lastLogin === null ? null : user.lastLogin.toISOString(),
    is_superuser: user.isSuperuser,
    username: user.username,
    first_name: user.firstName,
    last_name: user.lastName,
    email: user.email,
    is_staff: user.isStaff,
    is_active: user.isActive,
    date_joined: user.dateJoined.toISOString(),
    groups: [],
    user_permissions: [],
  };
}

/** An administrator in the admin permissions list. */
export function presentAdmin(user: User): Record<string, unknown> {
  return { username: user.username, is_superuser: user.isSuperuser };
}

/** The Application JSON; `url` is the app's hostname on the platform domain. */
export function presentApp(app: App, platformDomain: string): Record<string, unknown> {
  return {
    id: app.id,
    uuid: app.uuid,
    owner: app.owner,
    structure: { ...app.structure },
    url: `${app.id}.${platformDomain}`,
    created: formatTimestamp(app.created),
    updated: formatTimestamp(app.updated),
  };
}

/** The Container JSON. */
export function presentContainer(container: Container): Record<string, unknown> {
  return {
    owner: container.owner,
    app: container.app,
    release: `v${container.release}`,
    type: container.type,
    num: container.num,
    state: container.state,
    uuid: container.uuid,
    created: formatTimestamp(container.created),
    updated: formatTimestamp(container.updated),
  };
}

/** The Config JSON of a release: user values plus the service-set variables of that release. */
export function presentConfig(config: Config, releaseVersion: number): Record<string, unknown> {
  return {
    owner: config.owner,
    app: config.app,
    values: releaseEnvironment(config.values, config.app, releaseVersion),
    memory: { ...config.memory },
    cpu: { ...config.cpu },
    tags: { ...config.tags },
    uuid: config.uuid,
    created: formatTimestamp(config.created),
    updated: formatTimestamp(config.updated),
  };
}

/** The Domain JSON. */
export function presentDomain(domain: Domain): Record<string, unknown> {
  return {
    app: domain.app,
    domain: domain.domain,
    owner: domain.owner,
    uuid: domain.uuid,
    created: formatTimestamp(domain.created),
    updated: formatTimestamp(domain.updated),
  };
}

/** The AppTls JSON (extension: automatic HTTPS). */
export function presentAppTls(tls: AppTls): Record<string, unknown> {
  return {
    app: tls.app,
    https_redirect: tls.httpsRedirect,
    automatic: tls.automatic,
    names: tls.names.map((name) => ({
      name: name.name,
      state: name.state,
      source: name.source,
      expires: name.expires === null ? null : formatTimestamp(name.expires),
      reason: name.reason,
      next_attempt: name.nextAttempt === null ? null : formatTimestamp(name.nextAttempt),
    })),
  };
}

/** The Build JSON. */
export function presentBuild(build: Build): Record<string, unknown> {
  return {
    app: build.app,
    image: build.image,
    dockerfile: build.dockerfile,
    procfile: { ...build.procfile },
    sha: build.sha,
    owner: build.owner,
    uuid: build.uuid,
    created: formatTimestamp(build.created),
    updated: formatTimestamp(build.updated),
  };
}

/** The Release JSON; `build` is null for a release without a build. */
export function presentRelease(release: Release): Record<string, unknown> {
  return {
    app: release.app,
    version: release.version,
    build: release.build,
    config: release.config,
    summary: release.summary,
    owner: release.owner,
    uuid: release.uuid,
    created: formatTimestamp(release.created),
    updated: formatTimestamp(release.updated),
  };
}

/** The Key JSON. */
export function presentKey(key: Key): Record<string, unknown> {
  return {
    id: key.id,
    public: key.public,
    fingerprint: key.fingerprint,
    owner: key.owner,
    uuid: key.uuid,
    created: formatTimestamp(key.created),
    updated: formatTimestamp(key.updated),
  };
}

/** A certificate in a list. */
export function presentCertificateItem(cert: Certificate): Record<string, unknown> {
  return { common_name: cert.commonName, expires: formatTimestamp(cert.expires) };
}

/** A certificate in detail; the private key is never part of it. */
export function presentCertificate(cert: Certificate): Record<string, unknown> {
  return {
    id: cert.id,
    common_name: cert.commonName,
    owner: cert.owner,
    expires: formatTimestamp(cert.expires),
    starts: formatTimestamp(cert.starts),
    issuer: cert.issuer,
    san: [...cert.san],
    fingerprint: cert.fingerprint,
    created: formatTimestamp(cert.created),
    updated: formatTimestamp(cert.updated),
  };
}
