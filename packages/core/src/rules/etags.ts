import { PreconditionFailed } from '../errors';
import type { App, Config } from '../model/entities';

/*
 * Entity tags of what clients may write conditionally (`If-Match`) or read conditionally
 * (`If-None-Match`): an app (its structure included, so the tag of `GET /v1/apps/<id>/`
 * is the one `POST …/scale/` checks) and its current config.
 */

// FNV-1a's 64-bit offset basis and prime, as 32-bit halves: BigInt arithmetic allocates at
// every step, and an app's tag is computed for every read of it.
const OFFSET_HIGH = 0xcbf29ce4;
const OFFSET_LOW = 0x84222325;
// The prime 0x100000001b3 is 2^40 + 0x1b3: its high half is 0x100, its low half 0x1b3.
const PRIME_HIGH = 0x100;
const PRIME_LOW = 0x1b3;
const TWO_32 = 0x100000000;

/** FNV-1a, 64 bits, of the UTF-16 code units of `text`, as 16 hex digits. Not a security digest: a change detector. */
export function fingerprint(text: string): string {
  let high = OFFSET_HIGH;
  let low = OFFSET_LOW;
  for (let i = 0; i < text.length; i++) {
    low = (low ^ text.charCodeAt(i)) >>> 0;
    // (high·2^32 + low) · (PRIME_HIGH·2^32 + PRIME_LOW) mod 2^64; every product stays below
    // 2^53, so it is exact in a double.
    const lowProduct = low * PRIME_LOW;
    high = (high * PRIME_LOW + low * PRIME_HIGH + Math.floor(lowProduct / TWO_32)) >>> 0;
    low = lowProduct >>> 0;
  }
  return high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
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
