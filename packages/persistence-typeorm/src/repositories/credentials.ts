import type { Certificate, CertificateRepository, Key, KeyRepository, NewCertificate, Page, Slice } from '@svc/core';
import { translateUniqueViolation } from '../constraints';
import { fromCertificate, fromKey, toCertificate, toKey } from '../mapping';
import type { Session } from '../session';

/** KeyRepository on TypeORM. */
export class TypeOrmKeyRepository implements KeyRepository {
  constructor(private readonly session: Session) {}

  find(owner: string, id: string): Promise<Key | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.keys, { owner, id });
      return row === null ? null : toKey(row);
    });
  }

  findByFingerprint(fingerprint: string): Promise<Key | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.keys, { fingerprint });
      return row === null ? null : toKey(row);
    });
  }

  async create(key: Key): Promise<void> {
    await this.session.guarded(async (manager) => {
      try {
        await manager.insert(this.session.schemas.keys, fromKey(key));
      } catch (error) {
        throw translateUniqueViolation(error);
      }
    });
  }

  async delete(owner: string, id: string): Promise<void> {
    await this.session.write((manager) => manager.delete(this.session.schemas.keys, { owner, id }));
  }

  listForOwner(owner: string, slice: Slice): Promise<Page<Key>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.keys, {
        where: { owner },
        order: { id: 'ASC' },
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toKey) };
    });
  }
}

/** CertificateRepository on TypeORM. */
export class TypeOrmCertificateRepository implements CertificateRepository {
  constructor(private readonly session: Session) {}

  find(commonName: string): Promise<Certificate | null> {
    return this.session.read(async (manager) => {
      const row = await manager.findOneBy(this.session.schemas.certificates, { common_name: commonName });
      return row === null ? null : toCertificate(row);
    });
  }

  create(certificate: NewCertificate): Promise<Certificate> {
    return this.session.guarded(async (manager) => {
      const row = fromCertificate(certificate);
      try {
        const result = await manager.insert(this.session.schemas.certificates, row);
        const id = Number(result.identifiers[0]?.['id']);
        return toCertificate({ ...row, id });
      } catch (error) {
        throw translateUniqueViolation(error);
      }
    });
  }

  async delete(commonName: string): Promise<void> {
    await this.session.write((manager) =>
      manager.delete(this.session.schemas.certificates, { common_name: commonName }),
    );
  }

  list(owner: string | null, slice: Slice): Promise<Page<Certificate>> {
    return this.session.read(async (manager) => {
      const [rows, count] = await manager.findAndCount(this.session.schemas.certificates, {
        where: owner === null ? {} : { owner },
        order: { common_name: 'ASC' },
        skip: slice.offset,
        take: slice.limit,
      });
      return { count, items: rows.map(toCertificate) };
    });
  }
}
