import { EntitySchema, type EntitySchemaColumnOptions } from 'typeorm';
import type { CpuLimits, MemoryLimits, Procfile, Structure, Tags } from '@svc/core';
import type { Dialect } from './dialect';

/*
 * Row shapes, one per table, named as the columns are. They never leave this package:
 * repositories convert them to and from core entities with the functions in mapping.ts.
 * The tables themselves are created by the hand-written migrations, never from these
 * schemas, which only tell TypeORM how to read and write values.
 */

/** A row of `users`. */
export interface UserRow {
  id: number;
  username: string;
  email: string;
  first_name: string;
  last_name: string;
  password_hash: string;
  is_superuser: boolean;
  is_staff: boolean;
  is_active: boolean;
  last_login: Date | null;
  date_joined: Date;
}

/** A row of `tokens`. */
export interface TokenRow {
  hash: string;
  username: string;
  created: Date;
  expires: Date | null;
}

/** A row of `login_failures`. */
export interface LoginFailureRow {
  id: number;
  username: string;
  at: Date;
  address: string;
}

/** A row of `apps`. */
export interface AppRow {
  uuid: string;
  id: string;
  owner: string;
  structure: Structure;
  created: Date;
  updated: Date;
}

/** A row of `configs`. */
export interface ConfigRow {
  uuid: string;
  app: string;
  owner: string;
  values: Record<string, string>;
  memory: MemoryLimits;
  cpu: CpuLimits;
  tags: Tags;
  created: Date;
  updated: Date;
}

/** A row of `builds`. */
export interface BuildRow {
  uuid: string;
  app: string;
  owner: string;
  image: string;
  dockerfile: string;
  procfile: Procfile;
  sha: string;
  workdir: string | null;
  created: Date;
  updated: Date;
}

/** A row of `releases`. */
export interface ReleaseRow {
  uuid: string;
  app: string;
  owner: string;
  version: number;
  build: string | null;
  config: string;
  summary: string;
  created: Date;
  updated: Date;
}

/** A row of `containers`. */
export interface ContainerRow {
  uuid: string;
  app: string;
  owner: string;
  release: number;
  type: string;
  num: number;
  state: string;
  created: Date;
  updated: Date;
}

/** A row of `domains`. */
export interface DomainRow {
  uuid: string;
  app: string;
  domain: string;
  owner: string;
  created: Date;
  updated: Date;
}

/** A row of `keys`. */
export interface KeyRow {
  uuid: string;
  id: string;
  owner: string;
  public: string;
  fingerprint: string;
  created: Date;
  updated: Date;
}

/** A row of `permissions`. */
export interface PermissionRow {
  id: number;
  app: string;
  username: string;
}

/** A row of `certificates`. */
export interface CertificateRow {
  id: number;
  common_name: string;
  owner: string;
  certificate: string;
  sealed_key: string;
  san: string[];
  fingerprint: string;
  issuer: string;
  starts: Date;
  expires: Date;
  created: Date;
  updated: Date;
}

/** A row of `log_entries`; PostgreSQL returns the bigint id as a string. */
export interface LogEntryRow {
  id: string | number;
  app: string;
  time: Date;
  source: string;
  message: string;
}

/** A row of `controller_secrets`. */
export interface SecretRow {
  name: string;
  value: string;
  created: Date;
}

/** The entity schemas of one dialect, one per table. */
export interface Schemas {
  users: EntitySchema<UserRow>;
  tokens: EntitySchema<TokenRow>;
  loginFailures: EntitySchema<LoginFailureRow>;
  apps: EntitySchema<AppRow>;
  configs: EntitySchema<ConfigRow>;
  builds: EntitySchema<BuildRow>;
  releases: EntitySchema<ReleaseRow>;
  containers: EntitySchema<ContainerRow>;
  domains: EntitySchema<DomainRow>;
  keys: EntitySchema<KeyRow>;
  permissions: EntitySchema<PermissionRow>;
  certificates: EntitySchema<CertificateRow>;
  logEntries: EntitySchema<LogEntryRow>;
  secrets: EntitySchema<SecretRow>;
}

type Columns<T> = { [K in keyof T]: EntitySchemaColumnOptions };

/** Builds the entity schemas for `dialect`; only the date and JSON column types differ. */
export function buildSchemas(dialect: Dialect): Schemas {
  // SQLite keeps instants as `YYYY-MM-DD HH:MM:SS.SSS` UTC text, which sorts in time order;
  // PostgreSQL as timestamptz(3). Both keep milliseconds.
  const instant: EntitySchemaColumnOptions =
    dialect === 'sqlite' ? { type: 'datetime' } : { type: 'timestamp with time zone', precision: 3 };
  const optionalInstant: EntitySchemaColumnOptions = { ...instant, nullable: true };
  // PostgreSQL `json` (not jsonb) keeps the text as written, so object keys keep their order.
  const json: EntitySchemaColumnOptions = { type: dialect === 'sqlite' ? 'simple-json' : 'json' };
  const text: EntitySchemaColumnOptions = { type: 'text' };
  const integer: EntitySchemaColumnOptions = { type: 'integer' };
  const boolean: EntitySchemaColumnOptions = { type: 'boolean' };
  const serial: EntitySchemaColumnOptions = { type: 'integer', primary: true, generated: 'increment' };
  const key: EntitySchemaColumnOptions = { type: 'text', primary: true };
  const stamps = { created: instant, updated: instant };

  const schema = <T>(name: string, tableName: string, columns: Columns<T>): EntitySchema<T> =>
    new EntitySchema<T>({ name, tableName, columns });

  return {
    users: schema<UserRow>('UserRow', 'users', {
      id: serial,
      username: text,
      email: text,
      first_name: text,
      last_name: text,
      password_hash: text,
      is_superuser: boolean,
      is_staff: boolean,
      is_active: boolean,
      last_login: optionalInstant,
      date_joined: instant,
    }),
    tokens: schema<TokenRow>('TokenRow', 'tokens', {
      hash: key,
      username: text,
      created: instant,
      expires: optionalInstant,
    }),
    loginFailures: schema<LoginFailureRow>('LoginFailureRow', 'login_failures', {
      id: serial,
      username: text,
      at: instant,
      address: text,
    }),
    apps: schema<AppRow>('AppRow', 'apps', { uuid: key, id: text, owner: text, structure: json, ...stamps }),
    configs: schema<ConfigRow>('ConfigRow', 'configs', {
      uuid: key,
      app: text,
      owner: text,
      values: json,
      memory: json,
      cpu: json,
      tags: json,
      ...stamps,
    }),
    builds: schema<BuildRow>('BuildRow', 'builds', {
      uuid: key,
      app: text,
      owner: text,
      image: text,
      dockerfile: text,
      procfile: json,
      sha: text,
      workdir: { type: 'text', nullable: true },
      ...stamps,
    }),
    releases: schema<ReleaseRow>('ReleaseRow', 'releases', {
      uuid: key,
      app: text,
      owner: text,
      version: integer,
      build: { type: 'text', nullable: true },
      config: text,
      summary: text,
      ...stamps,
    }),
    containers: schema<ContainerRow>('ContainerRow', 'containers', {
      uuid: key,
      app: text,
      owner: text,
      release: integer,
      type: text,
      num: integer,
      state: text,
      ...stamps,
    }),
    domains: schema<DomainRow>('DomainRow', 'domains', { uuid: key, app: text, domain: text, owner: text, ...stamps }),
    keys: schema<KeyRow>('KeyRow', 'keys', {
      uuid: key,
      id: text,
      owner: text,
      public: text,
      fingerprint: text,
      ...stamps,
    }),
    permissions: schema<PermissionRow>('PermissionRow', 'permissions', { id: serial, app: text, username: text }),
    certificates: schema<CertificateRow>('CertificateRow', 'certificates', {
      id: serial,
      common_name: text,
      owner: text,
      certificate: text,
      sealed_key: text,
      san: json,
      fingerprint: text,
      issuer: text,
      starts: instant,
      expires: instant,
      ...stamps,
    }),
    logEntries: schema<LogEntryRow>('LogEntryRow', 'log_entries', {
      id: { type: dialect === 'sqlite' ? 'integer' : 'bigint', primary: true, generated: 'increment' },
      app: text,
      time: instant,
      source: text,
      message: text,
    }),
    secrets: schema<SecretRow>('SecretRow', 'controller_secrets', { name: key, value: text, created: instant }),
  };
}

/** Every schema of a set, for a DataSource's `entities`. */
export function allSchemas(schemas: Schemas): EntitySchema[] {
  return Object.values(schemas) as EntitySchema[];
}
