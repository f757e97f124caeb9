import { DomainError, Unavailable } from '@svc/core';

/** The code of the domain error that reports an unreachable database. */
export const DATABASE_UNAVAILABLE = 'DATABASE.UNAVAILABLE';

const MESSAGE = 'The database is not available; try again shortly.';

// Socket-level failures of the client library (Node system error codes).
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/*
 * PostgreSQL SQLSTATEs that say the server or the connection is gone, not that the
 * statement is wrong: class 08 (connection exception), operator intervention (57P01 admin
 * shutdown, 57P02 crash shutdown, 57P03 cannot connect now), too many connections, and a
 * database that no longer exists when a new connection is opened (3D000).
 */
const PG_UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300', '3D000']);
const PG_CONNECTION_CLASS = /^08[0-9A-Z]{3}$/;

/*
 * SQLite result codes (extended codes start with the primary one) that say the file cannot
 * be used right now: still locked after the busy timeout, an I/O error, a file that cannot
 * be opened, a full disk.
 */
const SQLITE_UNAVAILABLE_PREFIXES = ['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_FULL', 'SQLITE_PROTOCOL'];

// Failures that pg and TypeORM report without a code.
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/i,
  /^timeout exceeded when trying to connect/i,
  /^Client has encountered a connection error and is not queryable/i,
  /^Client was closed and is not queryable/i,
  /^Cannot use a pool after calling end on the pool/i,
  /^The database connection is not open/i,
  /^terminating connection /i,
  /^Driver not Connected/i,
];

/*
 * TypeORM's errors for a data source that is not (or no longer) connected. A query runner
 * is released behind the transaction's back only when its connection failed, so a query on
 * a released runner means the connection was lost midway.
 */
const UNAVAILABLE_NAMES = new Set(['CannotExecuteNotConnectedError', 'ConnectionIsNotSetError', 'QueryRunnerAlreadyReleasedError']);

const MAX_DEPTH = 5;

function isUnavailableCode(code: unknown): boolean {
  if (typeof code !== 'string') return false;
  if (NETWORK_CODES.has(code) || PG_UNAVAILABLE_CODES.has(code) || PG_CONNECTION_CLASS.test(code)) return true;
  return SQLITE_UNAVAILABLE_PREFIXES.some((prefix) => code === prefix || code.startsWith(`${prefix}_`));
}

function inspect(error: unknown, depth: number): boolean {
  if (typeof error !== 'object' || error === null || depth > MAX_DEPTH) return false;
  const record = error as { code?: unknown; message?: unknown; name?: unknown; driverError?: unknown; cause?: unknown; errors?: unknown };
  if (isUnavailableCode(record.code)) return true;
  if (typeof record.name === 'string' && UNAVAILABLE_NAMES.has(record.name)) return true;
  if (typeof record.message === 'string') {
    const message = record.message;
    if (UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  }
  // TypeORM wraps the driver's error; Node wraps the attempts of one connect in an AggregateError.
  if (inspect(record.driverError, depth + 1) || inspect(record.cause, depth + 1)) return true;
  return Array.isArray(record.errors) && record.errors.some((inner) => inspect(inner, depth + 1));
}

/**
 * Whether `error` says the database cannot be reached or used right now (refused or lost
 * connection, server shutting down, pool timeout, SQLite file locked or unreadable), as
 * opposed to a statement the database rejected.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (DomainError.is(error)) return error.code === DATABASE_UNAVAILABLE;
  return inspect(error, 0);
}

/** The domain error that a request answers with while the database cannot be reached. */
export function databaseUnavailable(): Unavailable {
  return new Unavailable(DATABASE_UNAVAILABLE, MESSAGE);
}

/**
 * Turns a failure to reach the database into the core's Unavailable (a 503 over HTTP);
 * returns any other error unchanged, for the caller to rethrow.
 */
export function translateUnavailable(error: unknown): unknown {
  // Domain errors already say what they mean (a unique violation, a lost race).
  if (DomainError.is(error)) return error;
  return isDatabaseUnavailable(error) ? databaseUnavailable() : error;
}

/** Runs `operation` and rethrows a failure to reach the database as Unavailable. */
export async function guardAvailability<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw translateUnavailable(error);
  }
}
