/*
 * The rules a tenant's image reference (a Dockerfile's FROM, an `image` deploy, a `run`) must
 * pass before the engine resolves it. All apps' images live in one image store, so:
 *  - an image id or id prefix is never a tenant's reference: the engine resolves a hex word
 *    to any image whose id starts with it, the unnamed layers of other apps' builds included;
 *  - a reference the engine has must be one of the image's own names (tags or digests): a
 *    reference the engine resolved some other way (an id prefix) is refused;
 *  - an image labelled for another app (another id, or the same id under another uuid: an
 *    app re-created under a deleted app's name) is refused.
 */
import type Docker from 'dockerode';
import { LABELS } from './engine';

/** The label of the app's uuid on the images the platform builds. */
export const APP_UUID_LABEL = 'svc.app-uuid';

/** Whether a reference is an image id or a prefix of one (`sha256:…`, or a bare hex word the engine may read as a prefix). */
export function isImageIdReference(reference: string): boolean {
  const value = reference.trim().toLowerCase();
  if (/^sha256:[0-9a-f]*$/.test(value)) return true;
  // A bare hex word without registry, path or tag: the engine tries it as an id prefix when no image has that name.
  return /^[0-9a-f]{1,64}$/.test(value);
}

/**
 * The digest of a `name@sha256:…` reference: the engine also finds a local image whose id is
 * that digest, whatever the name says, so the digest must be checked as an id too.
 */
export function digestOf(reference: string): string | null {
  return /@(sha256:[0-9a-f]{64})$/i.exec(reference.trim())?.[1]?.toLowerCase() ?? null;
}

/** A reference as the engine lists it among an image's names: `docker.io/library/` left out, `:latest` added to an untagged name. */
export function normalizedReference(reference: string): string {
  let value = reference.trim();
  for (const prefix of ['docker.io/library/', 'index.docker.io/library/', 'docker.io/', 'index.docker.io/']) {
    if (value.startsWith(prefix)) {
      value = value.slice(prefix.length);
      break;
    }
  }
  if (value.includes('@')) return value;
  const lastSlash = value.lastIndexOf('/');
  return value.slice(lastSlash + 1).includes(':') ? value : `${value}:latest`;
}

/** Whether the engine's image is named by `reference` (one of its tags or digests), not found by its id. */
export function imageNamedBy(reference: string, image: Pick<Docker.ImageInspectInfo, 'RepoTags' | 'RepoDigests'>): boolean {
  const wanted = normalizedReference(reference);
  const names = [...(image.RepoTags ?? []), ...(image.RepoDigests ?? [])].map(normalizedReference);
  return names.includes(wanted);
}

/** The owner an engine image names by its labels, or null for an image the platform did not build. */
export function imageOwner(image: Pick<Docker.ImageInspectInfo, 'Config'>): { app: string; uuid: string | null } | null {
  const labels = (image.Config as { Labels?: Record<string, string> | null } | undefined)?.Labels ?? {};
  const app = labels[LABELS.app];
  return app === undefined ? null : { app, uuid: labels[APP_UUID_LABEL] ?? null };
}

/** Whether a refusal of `refusalOf` is for an image of another app (not for a reference by id). */
export function isImageOfAnotherApp(refusal: string): boolean {
  return refusal.endsWith('was built for another app');
}

/**
 * Why `app` (with `uuid` when known) may not use the engine's image found for `reference`,
 * or null when it may.
 */
export function refusalOf(reference: string, image: Pick<Docker.ImageInspectInfo, 'RepoTags' | 'RepoDigests' | 'Config'>, app: string, uuid: string | null): string | null {
  if (isImageIdReference(reference) || !imageNamedBy(reference, image)) {
    return `${reference} is named by its id; name images by repository and tag or digest`;
  }
  const owner = imageOwner(image);
  if (owner !== null && (owner.app !== app || (uuid !== null && owner.uuid !== null && owner.uuid !== uuid))) {
    return `${reference} was built for another app`;
  }
  return null;
}
