import { AlreadyExists, Forbidden, NotFound, RequestRejected, ValidationFailed } from '../errors';
import type { App, Certificate, Domain, Key, User } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import { assertPageExists, sliceOf } from '../model/pagination';
import type { Repositories } from '../ports/repositories';
import { canAdministerApp, isAdmin } from '../rules/apps';
import { normalizeDomain } from '../rules/domains';
import { assertDomainQuota } from '../rules/quotas';
import { FieldErrorCollector, bodyObject, optionalString, requiredString } from '../rules/fields';
import { policyFor, type ApiVersion } from '../version/policy';
import { loadAdministeredApp, loadVisibleApp, logEvent, pageUnderApp, type Actor, type CoreDependencies } from './context';
import { journal } from './journal';
import { assertMayClaimDomain, mayManageApp } from './domain-ownership';

/** Lists an app's custom domains. */
export class ListDomains {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, page: PageRequest): Promise<Page<Domain>> {
    const repos = this.deps.uow.repositories;
    return pageUnderApp(repos, actor, appId, page, (app, slice) => repos.domains.listForApp(app, slice));
  }
}

/** Adds a custom domain to an app; a domain belongs to at most one app. */
export class AddDomain {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids' | 'settings' | 'logs'>) {}

  /**
   * A name under a domain that an app of another owner holds needs someone who manages that app (ADR 0037).
   * @throws ValidationFailed; AlreadyExists('domain'); Forbidden (DOMAIN.NOT_CONTROLLED); QuotaExceeded (domains per app); NotFound, AppNotVisible
   */
  async execute(actor: Actor, appId: string, body: unknown): Promise<Domain> {
    const domain = await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const name = normalizeDomain(bodyObject(body).domain, this.deps.settings.platformDomain);
      if (await repos.domains.find(name)) throw new AlreadyExists('domain');
      await assertMayClaimDomain(repos, actor.user, app, name);
      assertDomainQuota((await repos.domains.listForApp(app.id, { offset: 0, limit: 1 })).count, this.deps.settings.quotas);
      const now = this.deps.clock.now();
      const domain: Domain = { uuid: this.deps.ids.uuid(), app: app.id, domain: name, owner: actor.user.username, created: now, updated: now };
      await repos.domains.create(domain);
      await journal(repos, this.deps, actor, { action: 'domain.create', app, target: name, summary: `${actor.user.username} added domain ${name}` });
      return domain;
    });
    await logEvent(this.deps, domain.app, `${actor.user.username} added domain ${domain.domain}`);
    return domain;
  }
}

/** Removes a custom domain from an app. */
export class RemoveDomain {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'clock' | 'ids' | 'logs'>) {}

  /** @throws NotFound (app or domain), AppNotVisible */
  async execute(actor: Actor, appId: string, domainName: string): Promise<void> {
    let name: string;
    try {
      name = normalizeDomain(domainName, '.');
    } catch {
      name = domainName.toLowerCase();
    }
    const removed = await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const domain = await repos.domains.find(name);
      if (!domain || domain.app !== app.id) throw new NotFound('DOMAIN.NOT_FOUND');
      await repos.domains.delete(domain.domain);
      await journal(repos, this.deps, actor, { action: 'domain.delete', app, target: domain.domain, summary: `${actor.user.username} removed domain ${domain.domain}` });
      return domain;
    });
    await logEvent(this.deps, removed.app, `${actor.user.username} removed domain ${removed.domain}`);
  }
}

/** Lists the actor's SSH keys. */
export class ListKeys {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound for a page past the end. */
  async execute(actor: Actor, page: PageRequest): Promise<Page<Key>> {
    const result = await this.deps.uow.repositories.keys.listForOwner(actor.user.username, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** Registers an SSH public key for the actor. */
export class AddKey {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'keyParser' | 'clock' | 'ids'>) {}

  /** @throws ValidationFailed (id, public); AlreadyExists('id') per user or AlreadyExists('public') platform-wide. */
  async execute(actor: Actor, body: unknown): Promise<Key> {
    const input = bodyObject(body);
    const errors = new FieldErrorCollector();
    const id = requiredString(errors, input, 'id', 128);
    const text = requiredString(errors, input, 'public', 16 * 1024);
    let parsed;
    if (text !== undefined) {
      try {
        parsed = this.deps.keyParser.parse(text);
      } catch (error) {
        if (!(error instanceof ValidationFailed)) throw error;
        for (const message of error.fields?.public ?? [error.message]) errors.add('public', message);
      }
    }
    errors.throwIfAny();
    return this.deps.uow.transaction(async (repos) => {
      if (await repos.keys.find(actor.user.username, id!)) throw new AlreadyExists('id');
      if (await repos.keys.findByFingerprint(parsed!.fingerprint)) throw new AlreadyExists('public');
      const now = this.deps.clock.now();
      const key: Key = {
        uuid: this.deps.ids.uuid(), id: id!, public: parsed!.normalized, fingerprint: parsed!.fingerprint,
        owner: actor.user.username, created: now, updated: now,
      };
      await repos.keys.create(key);
      await journal(repos, this.deps, actor, { action: 'key.create', target: key.id, summary: `${actor.user.username} added SSH key ${key.id} (${key.fingerprint})` });
      return key;
    });
  }
}

/** Removes one of the actor's SSH keys. */
export class RemoveKey {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids'>) {}

  /** @throws NotFound when the actor has no key with that id. */
  async execute(actor: Actor, id: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      if (!(await repos.keys.find(actor.user.username, id))) throw new NotFound('KEY.NOT_FOUND');
      await repos.keys.delete(actor.user.username, id);
      await journal(repos, this.deps, actor, { action: 'key.delete', target: id, summary: `${actor.user.username} removed SSH key ${id}` });
    });
  }
}

/** Lists the collaborators of an app. */
export class ListPermissions {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string): Promise<string[]> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    return repos.permissions.listUsers(app.id);
  }
}

/** Lets another user collaborate on an app (idempotent). */
export class GrantPermission {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids' | 'logs'>) {}

  /** @throws ValidationFailed; NotFound (app or user); AppNotVisible; Forbidden for collaborators. */
  async execute(actor: Actor, appId: string, body: unknown): Promise<void> {
    const errors = new FieldErrorCollector();
    const username = requiredString(errors, bodyObject(body), 'username', 1024);
    errors.throwIfAny();
    const granted = await this.deps.uow.transaction(async (repos) => {
      const app = await loadAdministeredApp(repos, actor, appId, true);
      if (!(await repos.users.findByUsername(username!))) throw new NotFound('USER.NOT_FOUND', 'User not found.');
      if (username === app.owner) {
        throw new RequestRejected('PERM.OWNER', `${username} owns ${app.id} and has every permission already.`);
      }
      if (await repos.permissions.has(app.id, username!)) return false;
      await repos.permissions.grant(app.id, username!);
      await journal(repos, this.deps, actor, { action: 'perm.create', app, target: username!, summary: `${actor.user.username} added ${username!} to ${app.id} collaborators` });
      return true;
    });
    if (granted) await logEvent(this.deps, appId, `${actor.user.username} added ${username!} to ${appId} collaborators`);
  }
}

/** Takes a collaborator's access away; collaborators may remove themselves. */
export class RevokePermission {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids' | 'logs'>) {}

  /** @throws NotFound (app, or user not a collaborator); AppNotVisible; Forbidden. */
  async execute(actor: Actor, appId: string, username: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      if (!canAdministerApp(app, actor.user) && username !== actor.user.username) {
        throw new Forbidden('Only the owner of the application or an administrator may do this.');
      }
      if (!(await repos.permissions.has(app.id, username))) throw new NotFound('PERM.NOT_FOUND', 'Not found.');
      await repos.permissions.revoke(app.id, username);
      await journal(repos, this.deps, actor, { action: 'perm.delete', app, target: username, summary: `${actor.user.username} removed ${username} from ${app.id} collaborators` });
    });
    await logEvent(this.deps, appId, `${actor.user.username} removed ${username} from ${appId} collaborators`);
  }
}

function loadCertificateVisibleTo(cert: Certificate | null, actor: Actor): Certificate {
  if (!cert || (cert.owner !== actor.user.username && !isAdmin(actor.user))) throw new NotFound('CERT.NOT_FOUND');
  return cert;
}

/** Lists certificates: the actor's own, or all of them for administrators. */
export class ListCertificates {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound for a page past the end. */
  async execute(actor: Actor, page: PageRequest): Promise<Page<Certificate>> {
    const owner = isAdmin(actor.user) ? null : actor.user.username;
    const result = await this.deps.uow.repositories.certificates.list(owner, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** One certificate by common name. */
export class GetCertificate {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound when absent or not the actor's. */
  async execute(actor: Actor, commonName: string): Promise<Certificate> {
    return loadCertificateVisibleTo(await this.deps.uow.repositories.certificates.find(commonName.toLowerCase()), actor);
  }
}

/**
 * Whether a certificate name (a host name, or a wildcard `*.<name>`) belongs to the user: a
 * custom domain of an app they may manage; the platform host of such an app
 * (`<app>.<platform domain>`) or a name under it; and for administrators also the platform
 * domain itself and its wildcard `*.<platform domain>`. A wildcard over a custom domain
 * belongs to nobody: a domain is attached to an app name by name, never a whole zone.
 */
export async function userControlsName(repos: Repositories, user: User, name: string, platformDomain: string): Promise<boolean> {
  const platform = platformDomain.toLowerCase();
  const host = name.toLowerCase();
  if (host === platform || host === `*.${platform}`) return isAdmin(user);
  if (host.endsWith(`.${platform}`)) {
    const labels = host.slice(0, -platform.length - 1).split('.');
    const appId = labels[labels.length - 1] as string;
    return appId !== '*' && (await mayManageApp(repos, await repos.apps.findById(appId), user));
  }
  if (host.includes('*')) return false;
  const domain = await repos.domains.find(host);
  return domain !== null && (await mayManageApp(repos, await repos.apps.findById(domain.app), user));
}

const COMMON_NAME_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;

/**
 * Stores a certificate with its private key, sealed with the server secret. Every name it
 * carries (common name, subject alternative names, and the common name given instead) must
 * belong to the caller: see userControlsName.
 */
export class AddCertificate {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'certificateParser' | 'secrets' | 'clock' | 'ids' | 'settings'>) {}

  /**
   * A certificate stored under the same name by a user who no longer controls it is replaced.
   * @throws ValidationFailed (certificate, key, common_name); AlreadyExists('common_name');
   *   Forbidden (CERT.NAME_NOT_CONTROLLED) for a name that is not the caller's.
   */
  async execute(actor: Actor, body: unknown, version: ApiVersion): Promise<Certificate> {
    const input = bodyObject(body);
    const errors = new FieldErrorCollector();
    const certificate = requiredString(errors, input, 'certificate', 256 * 1024);
    const key = requiredString(errors, input, 'key', 256 * 1024);
    const override = policyFor(version).certCommonNameOverride ? optionalString(errors, input, 'common_name', 253) : undefined;
    if (override !== undefined && !COMMON_NAME_PATTERN.test(override)) errors.add('common_name', 'Enter a valid hostname.');
    errors.throwIfAny();
    const parsed = this.deps.certificateParser.parse(certificate!, key!);
    const commonName = (override ?? parsed.commonName ?? parsed.san[0])?.toLowerCase();
    if (!commonName) {
      throw ValidationFailed.field('certificate', 'The certificate names no host: it has neither a common name nor a DNS name.');
    }
    const names = [...new Set([commonName, parsed.commonName, ...parsed.san].filter((n): n is string => !!n).map((n) => n.toLowerCase()))];
    return this.deps.uow.transaction(async (repos) => {
      for (const name of names) {
        if (!(await userControlsName(repos, actor.user, name, this.deps.settings.platformDomain))) {
          // The same answer whether the name is another tenant's or nobody's: it tells nothing of other tenants.
          throw new Forbidden(
            `The certificate names ${name}, which is not a domain of an app you manage.`,
            'CERT.NAME_NOT_CONTROLLED',
          );
        }
      }
      const existing = await repos.certificates.find(commonName);
      if (existing) {
        // A certificate left behind by someone who no longer has the name (domain removed,
        // app transferred) is no longer served, and must not keep the name's new owner out.
        const holder = await repos.users.findByUsername(existing.owner);
        const stale = holder === null || !(await userControlsName(repos, holder, existing.commonName, this.deps.settings.platformDomain));
        if (!stale) throw new AlreadyExists('common_name');
        await repos.certificates.delete(existing.commonName);
      }
      const now = this.deps.clock.now();
      // Certificates belong to accounts; the event goes to the app whose domain the certificate is named for, if any.
      const app = await appOfDomain(repos, commonName);
      await journal(repos, this.deps, actor, { action: 'cert.create', app, target: commonName, summary: `${actor.user.username} added a certificate for ${commonName}` });
      return repos.certificates.create({
        commonName,
        owner: actor.user.username,
        certificate: parsed.pem,
        sealedKey: this.deps.secrets.seal(key!),
        san: parsed.san,
        fingerprint: parsed.fingerprint,
        issuer: parsed.issuer,
        starts: parsed.starts,
        expires: parsed.expires,
        created: now,
        updated: now,
      });
    });
  }
}

/** The app whose custom domain `name` is, if any: certificates are journaled to it. */
async function appOfDomain(repos: Repositories, name: string): Promise<App | null> {
  const domain = await repos.domains.find(name);
  return domain === null ? null : repos.apps.findById(domain.app);
}

/**
 * The certificate the router presents for a TLS server name, looked up by the name it is
 * stored under (the exact host, or the wildcard one level up), and only while that name
 * still belongs to the certificate's owner: once a domain is removed, moved to another app
 * or the app transferred, the certificate stays stored but is no longer served.
 */
export class CertificateForServerName {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings'>) {}

  /** The certificate, or null when there is none or its owner no longer controls the name. */
  async execute(name: string): Promise<Certificate | null> {
    const repos = this.deps.uow.repositories;
    const certificate = await repos.certificates.find(name.toLowerCase());
    if (certificate === null) return null;
    const owner = await repos.users.findByUsername(certificate.owner);
    if (owner === null || !owner.isActive) return null;
    return (await userControlsName(repos, owner, certificate.commonName, this.deps.settings.platformDomain)) ? certificate : null;
  }
}

/** Deletes a certificate. */
export class RemoveCertificate {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids'>) {}

  /** @throws NotFound when absent or not the actor's. */
  async execute(actor: Actor, commonName: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      const cert = loadCertificateVisibleTo(await repos.certificates.find(commonName.toLowerCase()), actor);
      await repos.certificates.delete(cert.commonName);
      const app = await appOfDomain(repos, cert.commonName);
      await journal(repos, this.deps, actor, { action: 'cert.delete', app, target: cert.commonName, summary: `${actor.user.username} removed the certificate for ${cert.commonName}` });
    });
  }
}
