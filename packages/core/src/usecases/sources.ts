import { DomainError, NotAuthenticated, Unavailable } from '../errors';
import type { App, User } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import type { ImageBuilder, ImageBuildRequest } from '../ports/services';
import { collectRetainedBuilds, isDigestReference, isReleaseImage } from '../rules/sources';
import { logEvent, loadVisibleApp, type Actor, type CoreDependencies } from './context';

/** The answer to an SSH key that does not open an account. */
export const UNKNOWN_KEY = 'This SSH key is not registered with any active account.';

/**
 * The active user who registered the key with this fingerprint, read again on every call so
 * that a deleted key or account stops working at once.
 * @throws NotAuthenticated when no key has the fingerprint or its user is gone or inactive.
 */
export async function userOfKey(repos: Repositories, fingerprint: string): Promise<User> {
  const key = await repos.keys.findByFingerprint(fingerprint);
  const user = key === null ? null : await repos.users.findByUsername(key.owner);
  if (user === null || !user.isActive) throw new NotAuthenticated(UNKNOWN_KEY);
  return user;
}

/** The actor a key holder acts as: SSH presents a key, not an API token. */
export function keyActor(user: User): Actor {
  return { user, tokenHash: '' };
}

const RELEASE_PAGE = 100;

/**
 * The uuids of the builds an app keeps (see `collectRetainedBuilds`): those of its
 * `retention` most recently released distinct builds.
 */
export async function retainedBuilds(repos: Repositories, appId: string, retention: number): Promise<Set<string>> {
  const kept = new Set<string>();
  for (let offset = 0; ; offset += RELEASE_PAGE) {
    const page = await repos.releases.listForApp(appId, { offset, limit: RELEASE_PAGE });
    if (collectRetainedBuilds(kept, page.items, retention) || offset + RELEASE_PAGE >= page.count) return kept;
  }
}

/** Finds the account an SSH key belongs to. */
export class AuthenticateKey {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotAuthenticated when the key is not registered or its account is inactive. */
  async execute(fingerprint: string): Promise<User> {
    return userOfKey(this.deps.uow.repositories, fingerprint);
  }
}

/** Who may fetch from and push to an app's git repository, and which app it is. */
export interface GitAccess {
  user: User;
  app: App;
}

/** Checks that the holder of an SSH key may fetch from and push to an app's repository: its owner, a collaborator or an administrator. */
export class AuthorizeGitAccess {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /**
   * @throws NotAuthenticated when the key is no longer registered; NotFound when the app does
   *   not exist; AppNotVisible when the key's user may not see it.
   */
  async execute(fingerprint: string, appId: string): Promise<GitAccess> {
    const repos = this.deps.uow.repositories;
    const user = await userOfKey(repos, fingerprint);
    const app = await loadVisibleApp(repos, keyActor(user), appId);
    return { user, app };
  }
}

/** The working directories an app's builds still need: those of the builds it keeps, which can be rolled back to. */
export class ListRetainedWorkdirs {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings'>) {}

  /** Resolves with an empty list for an app that does not exist (any directory of it may go). */
  async execute(appId: string): Promise<string[]> {
    const repos = this.deps.uow.repositories;
    const workdirs = new Set<string>();
    for (const uuid of await retainedBuilds(repos, appId, this.deps.settings.buildRetention)) {
      const workdir = (await repos.builds.findByUuid(uuid))?.workdir;
      if (workdir) workdirs.add(workdir);
    }
    return [...workdirs].sort();
  }
}

/**
 * Builds a pushed commit into an image before anything is written, streaming the build's
 * output; resolves with the image's id, or its reference by digest when the builder pushes
 * builds to a registry.
 * @throws RequestRejected `BUILD.FAILED` when the source does not build; Unavailable
 *   `BUILDER.FAILED` when the image builder cannot be used.
 */
export async function buildSourceImage(images: ImageBuilder, request: ImageBuildRequest, output: (line: string) => void): Promise<string> {
  try {
    return await images.build(request, output);
  } catch (error) {
    if (DomainError.is(error)) throw error;
    throw new Unavailable('BUILDER.FAILED', `The image builder failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Names a built image for its release, inside the release's transaction (where the version is final). */
export async function tagSourceImage(images: ImageBuilder, image: string, reference: string): Promise<void> {
  try {
    await images.tag(image, reference);
  } catch (error) {
    throw new Unavailable('BUILDER.FAILED', `The image builder could not name the image ${reference}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Removes an image whose release was not made. Best effort: the push has failed already,
 * and the image's own error is the one to report.
 */
export async function discardSourceImage(images: ImageBuilder, image: string): Promise<void> {
  try {
    await images.remove(image);
  } catch {
    // Left as an unnamed image; the next prune of the app removes it.
  }
}

/**
 * Removes the images of an app's builds that are no longer kept (past `BUILD_RETENTION`),
 * never one a kept build (the current release's among them) names. A failure is written
 * to the app's log: the release is live already.
 */
export async function pruneSourceImages(deps: Pick<CoreDependencies, 'uow' | 'settings' | 'logs' | 'clock'>, images: ImageBuilder, appId: string): Promise<string[]> {
  try {
    const repos = deps.uow.repositories;
    const keep: string[] = [];
    for (const uuid of await retainedBuilds(repos, appId, deps.settings.buildRetention)) {
      const image = (await repos.builds.findByUuid(uuid))?.image;
      if (image !== undefined && (isReleaseImage(appId, image) || isDigestReference(image))) keep.push(image);
    }
    return await images.prune(appId, keep);
  } catch (error) {
    await logEvent(deps, appId, `old images could not be removed: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
}
