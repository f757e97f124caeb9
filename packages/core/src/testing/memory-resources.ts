import { AlreadyExists } from '../errors';
import type { Certificate, DeployLease, Domain, Key, NewCertificate } from '../model/entities';
import type { Page, Slice } from '../model/pagination';
import type { CertificateRepository, DeployLeaseRepository, DomainRepository, KeyRepository, PermissionRepository } from '../ports/repositories';
import { deepCopy } from './copy';
import { copyOrNull, page, type Context } from './memory-context';
import { compare, pair } from './memory-store';

/** The in-memory repositories of an app's resources (domains, keys, collaborators, certificates) and of deploy leases. */
export class MemoryDomains implements DomainRepository {
  constructor(private readonly c: Context) {}

  async find(domain: string): Promise<Domain | null> {
    return copyOrNull(this.c.read().domains.get(domain));
  }

  async create(domain: Domain): Promise<void> {
    const tables = this.c.write();
    if (tables.domains.has(domain.domain)) throw new AlreadyExists('domain');
    tables.domains.set(domain.domain, domain);
  }

  async delete(domain: string): Promise<void> {
    this.c.write().domains.remove(domain);
  }

  async listForApp(app: string, slice: Slice): Promise<Page<Domain>> {
    const rows = this.c
      .read()
      .domains.filter((d) => d.app === app)
      .sort((a, b) => compare(a.domain, b.domain));
    return page(rows, slice);
  }

  async listAfter(after: string | null, limit: number): Promise<Domain[]> {
    return this.c
      .read()
      .domains.values()
      .filter((d) => after === null || compare(d.domain, after) > 0)
      .sort((a, b) => compare(a.domain, b.domain))
      .slice(0, limit);
  }
}

export class MemoryKeys implements KeyRepository {
  constructor(private readonly c: Context) {}

  async find(owner: string, id: string): Promise<Key | null> {
    return copyOrNull(this.c.read().keys.get(pair(owner, id)));
  }

  async findByFingerprint(fingerprint: string): Promise<Key | null> {
    return copyOrNull(this.c.read().keys.find((k) => k.fingerprint === fingerprint));
  }

  async create(key: Key): Promise<void> {
    const tables = this.c.write();
    if (tables.keys.has(pair(key.owner, key.id))) throw new AlreadyExists('id');
    if (tables.keys.find((k) => k.fingerprint === key.fingerprint)) throw new AlreadyExists('public');
    tables.keys.set(pair(key.owner, key.id), key);
  }

  async delete(owner: string, id: string): Promise<void> {
    this.c.write().keys.remove(pair(owner, id));
  }

  async listForOwner(owner: string, slice: Slice): Promise<Page<Key>> {
    const rows = this.c
      .read()
      .keys.filter((k) => k.owner === owner)
      .sort((a, b) => compare(a.id, b.id));
    return page(rows, slice);
  }
}

export class MemoryPermissions implements PermissionRepository {
  constructor(private readonly c: Context) {}

  async listUsers(app: string): Promise<string[]> {
    return this.c
      .read()
      .permissions.filter((p) => p.app === app)
      .map((p) => p.username)
      .sort(compare);
  }

  async has(app: string, username: string): Promise<boolean> {
    return this.c.read().permissions.has(pair(app, username));
  }

  async grant(app: string, username: string): Promise<void> {
    const tables = this.c.write();
    if (!tables.permissions.has(pair(app, username))) {
      tables.permissions.set(pair(app, username), { app, username });
    }
  }

  async revoke(app: string, username: string): Promise<void> {
    this.c.write().permissions.remove(pair(app, username));
  }
}

export class MemoryCertificates implements CertificateRepository {
  constructor(private readonly c: Context) {}

  async find(commonName: string): Promise<Certificate | null> {
    return copyOrNull(this.c.read().certificates.get(commonName));
  }

  async create(certificate: NewCertificate): Promise<Certificate> {
    const tables = this.c.write();
    if (tables.certificates.has(certificate.commonName)) throw new AlreadyExists('common_name');
    const created: Certificate = { ...deepCopy(certificate), id: this.c.allocate('certificate') };
    tables.certificates.set(created.commonName, created);
    return deepCopy(created);
  }

  async delete(commonName: string): Promise<void> {
    this.c.write().certificates.remove(commonName);
  }

  async list(owner: string | null, slice: Slice): Promise<Page<Certificate>> {
    const rows = this.c
      .read()
      .certificates.filter((c) => owner === null || c.owner === owner)
      .sort((a, b) => compare(a.commonName, b.commonName));
    return page(rows, slice);
  }
}

export class MemoryDeploys implements DeployLeaseRepository {
  constructor(private readonly c: Context) {}

  async insert(lease: DeployLease): Promise<boolean> {
    const tables = this.c.write();
    if (tables.deploys.has(lease.app)) return false;
    tables.deploys.set(lease.app, lease);
    return true;
  }

  async find(app: string): Promise<DeployLease | null> {
    return copyOrNull(this.c.read().deploys.get(app));
  }

  async replace(holder: string, lease: DeployLease): Promise<boolean> {
    const tables = this.c.write();
    if (tables.deploys.get(lease.app)?.holder !== holder) return false;
    tables.deploys.set(lease.app, lease);
    return true;
  }

  async remove(app: string, holder: string): Promise<boolean> {
    const tables = this.c.write();
    if (tables.deploys.get(app)?.holder !== holder) return false;
    tables.deploys.remove(app);
    return true;
  }

  async list(): Promise<DeployLease[]> {
    return this.c
      .read()
      .deploys.values()
      .sort((a, b) => a.started.getTime() - b.started.getTime() || compare(a.app, b.app))
      .map(deepCopy);
  }
}
