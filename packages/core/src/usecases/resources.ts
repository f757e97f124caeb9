import { AlreadyExists, Forbidden, NotFound, RequestRejected, ValidationFailed } from '../errors';
import type { Certificate, Domain, Key } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import { assertPageExists, sliceOf } from '../model/pagination';
import { canAdministerApp, isAdmin } from '../rules/apps';
import { normalizeDomain } from '../rules/domains';
import { FieldErrorCollector, bodyObject, optionalString, requiredString } from '../rules/fields';
import { policyFor, type ApiVersion } from '../version/policy';
import { loadAdministeredApp, loadVisibleApp, logEvent, pageUnderApp, type Actor, type CoreDependencies } from './context';

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

  /** @throws ValidationFailed; AlreadyExists('domain'); NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, body: unknown): Promise<Domain> {
    const domain = await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const name = normalizeDomain(bodyObject(body).domain, this.deps.settings.platformDomain);
      if (await repos.domains.find(name)) throw new AlreadyExists('domain');
      const now = this.deps.clock.now();
      const domain: Domain = { uuid: this.deps.ids.uuid(), app: app.id, domain: name, owner: actor.user.username, created: now, updated: now };
      await repos.domains.create(domain);
      return domain;
    });
    await logEvent(this.deps, domain.app, `${actor.user.username} added domain ${domain.domain}`);
    return domain;
  }
}

/** Removes a custom domain from an app. */
export class RemoveDomain {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'clock' | 'logs'>) {}

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
      return key;
    });
  }
}

/** Removes one of the actor's SSH keys. */
export class RemoveKey {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound when the actor has no key with that id. */
  async execute(actor: Actor, id: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      if (!(await repos.keys.find(actor.user.username, id))) throw new NotFound('KEY.NOT_FOUND');
      await repos.keys.delete(actor.user.username, id);
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
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'logs'>) {}

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
      return true;
    });
    if (granted) await logEvent(this.deps, appId, `${actor.user.username} added ${username!} to ${appId} collaborators`);
  }
}

/** Takes a collaborator's access away; collaborators may remove themselves. */
export class RevokePermission {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'logs'>) {}

  /** @throws NotFound (app, or user not a collaborator); AppNotVisible; Forbidden. */
  async execute(actor: Actor, appId: string, username: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      if (!canAdministerApp(app, actor.user) && username !== actor.user.username) {
        throw new Forbidden('Only the owner of the application or an administrator may do this.');
      }
      if (!(await repos.permissions.has(app.id, username))) throw new NotFound('PERM.NOT_FOUND', 'Not found.');
      await repos.permissions.revoke(app.id, username);
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

const COMMON_NAME_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;

/** Stores a certificate with its private key, sealed with the server secret. */
export class AddCertificate {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'certificateParser' | 'secrets' | 'clock'>) {}

  /** @throws ValidationFailed (certificate, key, common_name); AlreadyExists('common_name'). */
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
    return this.deps.uow.transaction(async (repos) => {
      if (await repos.certificates.find(commonName)) throw new AlreadyExists('common_name');
      const now = this.deps.clock.now();
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

/** Deletes a certificate. */
export class RemoveCertificate {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound when absent or not the actor's. */
  async execute(actor: Actor, commonName: string): Promise<void> {
    await this.deps.uow.transaction(async (repos) => {
      const cert = loadCertificateVisibleTo(await repos.certificates.find(commonName.toLowerCase()), actor);
      await repos.certificates.delete(cert.commonName);
    });
  }
}
