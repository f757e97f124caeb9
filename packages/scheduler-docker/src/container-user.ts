import type Docker from 'dockerode';
import { imageOwner } from './image-references';

/** Whether a `USER` value names the root user (uid 0, by name or number, with or without a group). */
function isRoot(user: string): boolean {
  const name = user.split(':')[0]?.trim() ?? '';
  return name === '' || name === 'root' || /^0+$/.test(name);
}

/**
 * The user a container of `image` runs as. An image the platform built (labelled with its
 * app) runs as its own non-root `USER`: a buildpack's or Procfile build's files in `/app`
 * belong to that user (uid 10000), so the app can write them. Any other image, and a
 * platform-built one whose user is root or unset, runs as the operator's `user` (`DOCKER_USER`).
 */
export function containerUserFor(user: string, image: Pick<Docker.ImageInspectInfo, 'Config'>): string {
  if (imageOwner(image) === null) return user;
  const own = (image.Config as { User?: string | null } | undefined)?.User ?? '';
  return isRoot(own) ? user : own;
}
