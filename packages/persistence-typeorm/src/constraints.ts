import { AlreadyExists, DomainError } from '@svc/core';
import { QueryFailedError } from 'typeorm';

/** The unique constraint that guards release numbering. */
export const RELEASE_VERSION_CONSTRAINT = 'uq_releases_app_version';

interface UniqueConstraint {
  /** The name the migrations give it; PostgreSQL reports this name. */
  name: string;
  /** SQLite reports the table and columns instead of the name. */
  table: string;
  columns: string[];
  /** The request field the core reports a duplicate on; absent when the core handles it otherwise. */
  field?: string;
}

// Field names are the API's, so a duplicate becomes `{"<field>": ["This field must be unique."]}`.
const UNIQUE_CONSTRAINTS: readonly UniqueConstraint[] = [
  { name: 'uq_users_username', table: 'users', columns: ['username'], field: 'username' },
  { name: 'uq_apps_id', table: 'apps', columns: ['id'], field: 'id' },
  { name: 'uq_domains_domain', table: 'domains', columns: ['domain'], field: 'domain' },
  { name: 'uq_keys_owner_id', table: 'keys', columns: ['owner', 'id'], field: 'id' },
  { name: 'uq_keys_fingerprint', table: 'keys', columns: ['fingerprint'], field: 'public' },
  { name: 'uq_certificates_common_name', table: 'certificates', columns: ['common_name'], field: 'common_name' },
  { name: RELEASE_VERSION_CONSTRAINT, table: 'releases', columns: ['app', 'version'] },
];

const SQLITE_UNIQUE_CODES = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
const PG_UNIQUE_VIOLATION = '23505';
// Serialization failure and deadlock: PostgreSQL asks the client to run the transaction again.
const PG_RETRYABLE = new Set(['40001', '40P01']);

interface DriverError {
  code?: unknown;
  constraint?: unknown;
  message?: unknown;
}

function driverErrorOf(error: unknown): DriverError | null {
  if (!(error instanceof QueryFailedError)) return null;
  const driverError: unknown = error.driverError;
  return typeof driverError === 'object' && driverError !== null ? (driverError as DriverError) : null;
}

/**
 * The name of the unique constraint that `error` violated, or null when it is no unique
 * violation. SQLite names no constraint, so its `table.column` list is matched instead.
 */
export function violatedUniqueConstraint(error: unknown): string | null {
  const driverError = driverErrorOf(error);
  if (driverError === null) return null;
  if (driverError.code === PG_UNIQUE_VIOLATION) {
    return typeof driverError.constraint === 'string' ? driverError.constraint : 'unknown';
  }
  if (typeof driverError.code === 'string' && SQLITE_UNIQUE_CODES.has(driverError.code)) {
    const message = typeof driverError.message === 'string' ? driverError.message : '';
    // e.g. "UNIQUE constraint failed: keys.owner, keys.id"
    const listed = message.replace(/^.*constraint failed:\s*/i, '').split(',').map((part) => part.trim());
    const table = listed[0]?.split('.')[0] ?? '';
    const columns = listed.map((part) => part.slice(part.indexOf('.') + 1));
    const match = UNIQUE_CONSTRAINTS.find(
      (constraint) =>
        constraint.table === table &&
        constraint.columns.length === columns.length &&
        constraint.columns.every((column, i) => column === columns[i]),
    );
    return match?.name ?? `${table}(${columns.join(', ')})`;
  }
  return null;
}

/**
 * Turns a unique violation on a constraint the API reports into AlreadyExists on its field;
 * returns any other error unchanged, for the caller to rethrow.
 */
export function translateUniqueViolation(error: unknown): unknown {
  const name = violatedUniqueConstraint(error);
  if (name === null) return error;
  const field = UNIQUE_CONSTRAINTS.find((constraint) => constraint.name === name)?.field;
  return field === undefined ? error : new AlreadyExists(field);
}

/** Whether the whole transaction that failed with `error` may be run again. */
export function isRetryable(error: unknown): boolean {
  if (DomainError.is(error)) return error.code === 'RELEASE.VERSION_TAKEN';
  const code = driverErrorOf(error)?.code;
  return typeof code === 'string' && PG_RETRYABLE.has(code);
}
