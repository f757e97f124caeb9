/**
 * What went wrong, independent of any transport. The HTTP adapter maps each kind to a
 * status in exactly one place.
 */
export type ErrorKind =
  | 'invalid'
  | 'unauthenticated'
  | 'forbidden'
  | 'hidden'
  | 'not_found'
  | 'conflict'
  | 'throttled'
  | 'precondition_failed'
  | 'unprocessable'
  | 'unavailable';

/** Field name to messages, as returned for validation failures. */
export type FieldErrors = Record<string, string[]>;

const BRAND = Symbol.for('svc.DomainError');

/** Base of every error the core throws on purpose: a stable code, a kind and a safe message. */
export abstract class DomainError extends Error {
  readonly [BRAND] = true;
  abstract readonly code: string;
  abstract readonly kind: ErrorKind;
  /** Per-field messages for validation failures; absent for other errors. */
  readonly fields: FieldErrors | undefined;

  protected constructor(message: string, fields?: FieldErrors) {
    super(message);
    this.name = new.target.name;
    this.fields = fields;
  }

  /** True for any DomainError, also one created by another copy of this package. */
  static is(value: unknown): value is DomainError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** One or more request fields are invalid. */
export class ValidationFailed extends DomainError {
  readonly code = 'REQUEST.INVALID';
  readonly kind = 'invalid' as const;
  constructor(fields: FieldErrors) {
    super(Object.entries(fields).map(([f, m]) => `${f}: ${m.join(' ')}`).join('; '), fields);
  }

  /** A single field with a single message. */
  static field(field: string, message: string): ValidationFailed {
    return new ValidationFailed({ [field]: [message] });
  }
}

/** A value that must be unique is already taken. */
export class AlreadyExists extends DomainError {
  readonly code = 'RESOURCE.ALREADY_EXISTS';
  readonly kind = 'invalid' as const;
  constructor(readonly field: string) {
    super(`${field}: This field must be unique.`, { [field]: ['This field must be unique.'] });
  }
}

/** A business rule rejects the request (not tied to one field). */
export class RequestRejected extends DomainError {
  readonly kind = 'invalid' as const;
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** The current release has no build, so nothing can run. */
export class NoBuild extends RequestRejected {
  constructor() {
    super('RELEASE.NO_BUILD', 'No build associated with this release');
  }
}

/** No credentials, or credentials that are not valid. */
export class NotAuthenticated extends DomainError {
  readonly code = 'AUTH.NOT_AUTHENTICATED';
  readonly kind = 'unauthenticated' as const;
  constructor(message = 'Invalid token.') {
    super(message);
  }
}

/** Authenticated, but this action is not allowed for this user. */
export class Forbidden extends DomainError {
  readonly code: string;
  readonly kind = 'forbidden' as const;
  constructor(message = 'You do not have permission to perform this action.', code = 'AUTH.FORBIDDEN') {
    super(message);
    this.code = code;
  }
}

/** Something that does not exist (or that the caller must not learn exists). */
export class NotFound extends DomainError {
  readonly kind = 'not_found' as const;
  constructor(readonly code: string, message = 'Not found.') {
    super(message);
  }
}

/** The application exists but the caller may not see it. Rendered per API version (403 or 404). */
export class AppNotVisible extends DomainError {
  readonly code = 'APP.NOT_VISIBLE';
  readonly kind = 'hidden' as const;
  constructor() {
    super('You do not have permission to perform this action.');
  }
}

/** The request conflicts with the current state. */
export class Conflict extends DomainError {
  readonly kind = 'conflict' as const;
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/**
 * A rollback to a release without a build, asked of an app whose current release has one:
 * it would stop every process of the app and leave later config changes without a build.
 * `targets` names the releases that can be rolled back to (e.g. `v2 to v5, v7`).
 */
export class RollbackWithoutBuild extends Conflict {
  constructor(
    readonly app: string,
    readonly version: number,
    readonly targets: string,
  ) {
    super(
      'RELEASE.ROLLBACK_WITHOUT_BUILD',
      `Release v${version} has no build: rolling back to it would stop every process of ${app}. ` +
        `Releases that can be rolled back to: ${targets}.`,
    );
  }
}

/**
 * A rollback to a build the scheduler says it cannot run (made for another scheduler, an
 * image the engine cannot get); `reason` is the scheduler's. Nothing was started or stopped.
 */
export class BuildNotRunnable extends Conflict {
  constructor(
    readonly version: number,
    readonly reason: string,
  ) {
    super('RELEASE.BUILD_NOT_RUNNABLE', `Release v${version} cannot be rolled back to: ${reason}`);
  }
}

/** Too many recent failures; try again after `retryAfterSeconds`. */
export class Throttled extends DomainError {
  readonly code = 'AUTH.THROTTLED';
  readonly kind = 'throttled' as const;
  constructor(readonly retryAfterSeconds: number) {
    super(`Request was throttled. Expected available in ${retryAfterSeconds} seconds.`);
  }
}

/**
 * A quota of the platform would be exceeded (apps per user, processes, config size,
 * domains...): the request is valid, but the account may not have more. Nothing changes.
 */
export class QuotaExceeded extends DomainError {
  readonly code = 'QUOTA.EXCEEDED';
  readonly kind = 'forbidden' as const;
  constructor(
    readonly quota: string,
    readonly limit: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Too many of something held open at once (e.g. log streams of one user); try again once
 * one has ended. `retryAfterSeconds` is absent: the wait depends on the client itself.
 */
export class TooMany extends DomainError {
  readonly kind = 'throttled' as const;
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A dependency (the scheduler, the database) failed; the operation changed nothing. */
export class Unavailable extends DomainError {
  readonly kind = 'unavailable' as const;
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** A release version was taken by a concurrent writer; the unit of work may be retried. */
export class ReleaseVersionTaken extends DomainError {
  readonly code = 'RELEASE.VERSION_TAKEN';
  readonly kind = 'conflict' as const;
  constructor(app: string, version: number) {
    super(`Release v${version} of ${app} was created concurrently`);
  }
}

/** A conditional write (`If-Match`) named a version that is no longer the current one. */
export class PreconditionFailed extends DomainError {
  readonly code = 'REQUEST.PRECONDITION_FAILED';
  readonly kind = 'precondition_failed' as const;
  /** The current entity tag, for the answer's `ETag`. */
  constructor(readonly etag: string) {
    super('The resource has changed since the version named in If-Match.');
  }
}

/** An `Idempotency-Key` used again for a different request. */
export class IdempotencyKeyReused extends DomainError {
  readonly code = 'IDEMPOTENCY.KEY_REUSED';
  readonly kind = 'unprocessable' as const;
  constructor() {
    super('This Idempotency-Key was used for a different request; use a new key.');
  }
}
