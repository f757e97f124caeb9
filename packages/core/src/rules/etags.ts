import { PreconditionFailed } from '../errors';
import type { App, Config } from '../model/entities';

/*
 * Entity tags of what clients may write conditionally (`If-Match`) or read conditionally
 * (`If-None-Match`): an app (its structure included, so the tag of `GET /v1/apps/<id>/`
 * is the one `POST …/scale/` checks) and its current config.
 */

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** FNV-1a, 64 bits, of the UTF-16 code units of `text`, as 16 hex digits. Not a security digest: a change detector. */
export function fingerprint(text: string): string {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * FNV_PRIME) & MASK;
  }
  return hash.toString(16).padStart(16, '0');
}

/** The strong ETag of an app as it is now: it changes with its owner, structure or update time. */
export function appEtag(app: Pick<App, 'uuid' | 'id' | 'owner' | 'structure' | 'updated'>): string {
  return `"app-${fingerprint(JSON.stringify([app.uuid, app.id, app.owner, app.structure, app.updated.getTime()]))}"`;
}

/** The strong ETag of an app's current config: configs are immutable, so its uuid names its content. */
export function configEtag(config: Pick<Config, 'uuid'>): string {
  return `"config-${config.uuid}"`;
}

/**
 * Whether an `If-Match` or `If-None-Match` header value names `etag`: `*` names anything;
 * otherwise a comma-separated list of tags, weak ones (`W/`) compared by their opaque part.
 */
export function etagListMatches(header: string, etag: string): boolean {
  const trimmed = header.trim();
  if (trimmed === '*') return true;
  const bare = (tag: string): string => tag.trim().replace(/^W\//, '');
  return trimmed.split(',').some((tag) => bare(tag) === bare(etag));
}

/** @throws PreconditionFailed with the current tag when `ifMatch` is given and does not name it. */
export function assertIfMatch(ifMatch: string | undefined, current: string): void {
  if (ifMatch !== undefined && !etagListMatches(ifMatch, current)) throw new PreconditionFailed(current);
}
