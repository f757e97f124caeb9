import 'reflect-metadata';
import type { Request } from 'express';
import { plainToInstance } from 'class-transformer';
import { IsString, Length, Matches, validateSync } from 'class-validator';
import { APP_ID_MAX, APP_ID_PATTERN, PROCESS_TYPE_PATTERN, USERNAME_PATTERN } from '@svc/core';
import { routeNotFound } from './http-error';

/*
 * Shapes of path parameters. A value outside its shape cannot name any stored record, so
 * the request is answered 404 at the edge: storage never sees NUL bytes, control
 * characters or megabyte-long names.
 */

const NO_CONTROL_CHARACTERS = /^\P{Cc}+$/u;

/** `/v1/apps/:id/...` */
export class AppPath {
  @IsString()
  @Length(1, APP_ID_MAX)
  @Matches(APP_ID_PATTERN)
  id!: string;
}

/** `/v1/apps/:id/perms/:username`, `/v1/admin/perms/:username` (the latter without an id). */
export class UsernamePath {
  @IsString()
  @Length(1, 64)
  @Matches(USERNAME_PATTERN)
  username!: string;
}

/** `/v1/apps/:id/perms/:username` */
export class AppUserPath extends AppPath {
  @IsString()
  @Length(1, 64)
  @Matches(USERNAME_PATTERN)
  username!: string;
}

/** `/v1/apps/:id/containers/:type` */
export class ContainerTypePath extends AppPath {
  @IsString()
  @Length(1, 128)
  @Matches(PROCESS_TYPE_PATTERN)
  type!: string;
}

/** `/v1/apps/:id/containers/:type/:num` */
export class ContainerPath extends ContainerTypePath {
  @IsString()
  @Matches(/^[1-9][0-9]{0,8}$/)
  num!: string;
}

/** `/v1/apps/:id/domains/:domain` (one trailing dot allowed, as when adding). */
export class DomainPath extends AppPath {
  @IsString()
  @Length(1, 254)
  @Matches(/^[A-Za-z0-9.-]+$/)
  domain!: string;
}

/** `/v1/apps/:id/releases/v:version` */
export class ReleasePath extends AppPath {
  @IsString()
  @Matches(/^[0-9]{1,9}$/)
  version!: string;
}

/** `/v1/keys/:id`: key names are free text of up to 128 characters. */
export class KeyPath {
  @IsString()
  @Length(1, 128)
  @Matches(NO_CONTROL_CHARACTERS)
  id!: string;
}

/** `/v1/certs/:common_name`: usually a hostname, but a certificate's own CN may be any text. */
export class CertificatePath {
  @IsString()
  @Length(1, 253)
  @Matches(NO_CONTROL_CHARACTERS)
  common_name!: string;
}

/** Distinct parameter sets remembered per shape; past this the memory starts over. */
const REMEMBERED_PER_SHAPE = 4096;
/** Per shape: the outcome for each parameter set seen, the validated values or null when invalid. */
const outcomes = new WeakMap<object, Map<string, object | null>>();

/**
 * The validated path parameters of a request.
 *
 * Validation depends on the values alone, and class-validator's run costs more than the
 * rest of a cached read (measured: about 30 µs a request), so its outcome is remembered for
 * each distinct set of values, in a map per shape bounded in size.
 * @throws HttpError 404 when a parameter is outside its shape.
 */
export function pathParams<T extends object>(shape: new () => T, req: Request): T {
  let known = outcomes.get(shape);
  if (known === undefined) {
    known = new Map();
    outcomes.set(shape, known);
  }
  const key = JSON.stringify(req.params);
  let outcome = known.get(key);
  if (outcome === undefined) {
    const params = plainToInstance(shape, { ...req.params });
    const errors = validateSync(params, { whitelist: true, forbidUnknownValues: true });
    outcome = errors.length > 0 ? null : { ...params };
    if (known.size >= REMEMBERED_PER_SHAPE) known.clear();
    known.set(key, outcome);
  }
  if (outcome === null) throw routeNotFound();
  // A fresh instance per request: callers never share one.
  return Object.assign(Object.create(shape.prototype) as T, outcome);
}

/** `/v1/apps/:id/webhooks/:uuid` */
export class WebhookPath extends AppPath {
  @IsString()
  @Matches(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/)
  uuid!: string;
}
