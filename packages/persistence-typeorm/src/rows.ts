import type { AppRow, ConfigRow, ContainerRow, DomainRow, ReleaseRow, TokenRow, UserRow } from './schema';
import { readBoolean, readInstant, readInteger, readJson, readOptionalInstant } from './sql';

/*
 * Column lists of the hand-written statements and the rows they return, decoded into the
 * same row shapes TypeORM produces, so that mapping.ts converts both alike.
 */

/** A row as the driver returns it. */
export type RawRow = Record<string, unknown>;

export const USER_COLUMNS =
  '"id", "username", "email", "first_name", "last_name", "password_hash", "is_superuser", "is_staff", "is_active", "last_login", "date_joined"';
export const TOKEN_COLUMNS = '"hash", "username", "created", "expires"';
export const APP_COLUMNS = '"uuid", "id", "owner", "structure", "created", "updated"';
export const CONFIG_COLUMNS = '"uuid", "app", "owner", "values", "memory", "cpu", "tags", "created", "updated"';
export const RELEASE_COLUMNS = '"uuid", "app", "owner", "version", "build", "config", "summary", "created", "updated"';
export const DOMAIN_COLUMNS = '"uuid", "app", "domain", "owner", "created", "updated"';
export const CONTAINER_COLUMNS = '"uuid", "app", "owner", "release", "type", "num", "state", "created", "updated"';

/** `"a", "b"` as `p."a", p."b"`. */
export function qualified(prefix: string, columns: string): string {
  return columns
    .split(', ')
    .map((column) => `${prefix}.${column}`)
    .join(', ');
}

export function userRowOf(raw: RawRow): UserRow {
  return {
    id: readInteger(raw.id),
    username: raw.username as string,
    email: raw.email as string,
    first_name: raw.first_name as string,
    last_name: raw.last_name as string,
    password_hash: raw.password_hash as string,
    is_superuser: readBoolean(raw.is_superuser),
    is_staff: readBoolean(raw.is_staff),
    is_active: readBoolean(raw.is_active),
    last_login: readOptionalInstant(raw.last_login),
    date_joined: readInstant(raw.date_joined),
  };
}

export function tokenRowOf(raw: RawRow): TokenRow {
  return {
    hash: raw.hash as string,
    username: raw.username as string,
    created: readInstant(raw.created),
    expires: readOptionalInstant(raw.expires),
  };
}

export function appRowOf(raw: RawRow): AppRow {
  return {
    uuid: raw.uuid as string,
    id: raw.id as string,
    owner: raw.owner as string,
    structure: readJson(raw.structure),
    created: readInstant(raw.created),
    updated: readInstant(raw.updated),
  };
}

export function domainRowOf(raw: RawRow): DomainRow {
  return {
    uuid: raw.uuid as string,
    app: raw.app as string,
    domain: raw.domain as string,
    owner: raw.owner as string,
    created: readInstant(raw.created),
    updated: readInstant(raw.updated),
  };
}

export function configRowOf(raw: RawRow): ConfigRow {
  return {
    uuid: raw.uuid as string,
    app: raw.app as string,
    owner: raw.owner as string,
    values: readJson(raw.values),
    memory: readJson(raw.memory),
    cpu: readJson(raw.cpu),
    tags: readJson(raw.tags),
    created: readInstant(raw.created),
    updated: readInstant(raw.updated),
  };
}

export function releaseRowOf(raw: RawRow): ReleaseRow {
  return {
    uuid: raw.uuid as string,
    app: raw.app as string,
    owner: raw.owner as string,
    version: readInteger(raw.version),
    build: (raw.build as string | null) ?? null,
    config: raw.config as string,
    summary: raw.summary as string,
    created: readInstant(raw.created),
    updated: readInstant(raw.updated),
  };
}

export function containerRowOf(raw: RawRow): ContainerRow {
  return {
    uuid: raw.uuid as string,
    app: raw.app as string,
    owner: raw.owner as string,
    release: readInteger(raw.release),
    type: raw.type as string,
    num: readInteger(raw.num),
    state: raw.state as string,
    created: readInstant(raw.created),
    updated: readInstant(raw.updated),
  };
}

/** The count in the first row's `n` column, 0 when there is no row. */
export function countOf(rows: RawRow[]): number {
  const first = rows[0];
  return first === undefined ? 0 : readInteger(first.n);
}
