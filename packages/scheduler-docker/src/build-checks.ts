/*
 * The checks before the engine sees a tenant's Dockerfile: the engine confines build steps
 * (user-namespace remapping or rootless), and every image the Dockerfile reads is one the
 * app may read, pulled only from a registry outside the host's own network.
 */
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { buildFailed, type ImageBuildRequest } from '@svc/core';
import { UnreadableReference, readDockerfile } from './dockerfile-references';
import { digestOf, imageNamedBy, isImageIdReference, isImageOfAnotherApp, refusalOf } from './image-references';
import { RefusedRegistry, assertPublicRegistry } from './registry-hosts';
import { engineReason } from './engine';
import { authFor, type RegistryLogin } from './registry-login';

/** Whether the engine's security options say its containers' root is not the host's root. */
export function confinesRoot(securityOptions: readonly string[] | undefined): boolean {
  return (securityOptions ?? []).some((option) => /(^|,)name=(userns|rootless)(,|$)/.test(option));
}

/** What the operator reads when the engine does not confine Dockerfile builds. */
export const UNCONFINED_ENGINE =
  'Dockerfile builds are refused: the Docker engine runs build steps as the host\'s root. Start dockerd with user-namespace remapping ("userns-remap": "default" in daemon.json, or --userns-remap=default) or run it rootless.';

const confined = new WeakMap<Docker, Promise<boolean>>();

/** Whether the engine confines build steps; asked once per engine client. */
export function engineConfinesBuilds(docker: Docker): Promise<boolean> {
  let known = confined.get(docker);
  if (known === undefined) {
    known = docker.info().then((info: { SecurityOptions?: string[] }) => confinesRoot(info.SecurityOptions));
    known.catch(() => confined.delete(docker));
    confined.set(docker, known);
  }
  return known;
}

/** What the operator reads when the engine's cgroup driver leaves no cgroup to a build. */
export const SYSTEMD_CGROUP_DRIVER =
  'Dockerfile builds are refused: the Docker engine uses the systemd cgroup driver, so a build cannot be given its own process limit. Start dockerd with --exec-opt native.cgroupdriver=cgroupfs.';

const drivers = new WeakMap<Docker, Promise<string>>();

/** The engine's cgroup driver (`cgroupfs`, `systemd`); asked once per engine client. */
export function engineCgroupDriver(docker: Docker): Promise<string> {
  let known = drivers.get(docker);
  if (known === undefined) {
    known = docker.info().then((info: { CgroupDriver?: string }) => info.CgroupDriver ?? 'cgroupfs');
    known.catch(() => drivers.delete(docker));
    drivers.set(docker, known);
  }
  return known;
}

/** @throws RequestRejected `BUILD.FAILED` when the engine's builds cannot be put in a cgroup of the platform's. */
export async function assertEngineTakesBuildCgroups(docker: Docker): Promise<void> {
  if ((await engineCgroupDriver(docker)) === 'systemd') throw buildFailed(SYSTEMD_CGROUP_DRIVER);
}

/** @throws RequestRejected `BUILD.FAILED` when the engine runs build steps as the host's root. */
export async function assertEngineConfinesBuilds(docker: Docker): Promise<void> {
  if (!(await engineConfinesBuilds(docker))) throw buildFailed(UNCONFINED_ENGINE);
}

const statusOf = (error: unknown): number | undefined =>
  error !== null && typeof error === 'object' ? (error as { statusCode?: number }).statusCode : undefined;

/**
 * Pulls a build's base image into the engine.
 * @throws RequestRejected `BUILD.FAILED` with the registry's reason.
 */
async function pullImage(docker: Docker, reference: string, login: RegistryLogin | null): Promise<void> {
  const auth = authFor(login, reference);
  try {
    const stream = (await docker.pull(reference, auth === undefined ? {} : { authconfig: auth })) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) => {
      let failure: string | null = null;
      docker.modem.followProgress(
        stream,
        (error: Error | null) => (error ? reject(error) : failure !== null ? reject(new Error(failure)) : resolve()),
        (event: { error?: string; errorDetail?: { message?: string } }) => {
          if (event.error) failure = event.errorDetail?.message ?? event.error;
        },
      );
    });
  } catch (error) {
    throw buildFailed(`pulling ${reference} failed: ${engineReason(error)}.`);
  }
}

/** Whether `name@sha256:<digest>` would reach a local image whose id is that digest without being one of its names. */
export async function digestNamesLocalImageById(docker: Docker, reference: string): Promise<boolean> {
  const digest = digestOf(reference);
  if (digest === null) return false;
  try {
    return !imageNamedBy(reference, await docker.getImage(digest).inspect());
  } catch (error) {
    if (statusOf(error) === 404) return false;
    throw error;
  }
}

/**
 * Refuses a reference `app` may not read: an id or id prefix, another app's image, or a
 * pull from this host's or a private network's registry (unless `allowed` names it).
 * @throws RequestRejected `BUILD.FAILED`.
 */
export async function assertImageReadable(
  docker: Docker,
  reference: string,
  app: string,
  uuid: string | null,
  allowed: readonly string[],
  login: RegistryLogin | null = null,
  withTriggers = true,
): Promise<void> {
  if (isImageIdReference(reference)) throw buildFailed(`${reference} names an image by its id; name images by repository and tag or digest.`);
  if (await digestNamesLocalImageById(docker, reference)) throw buildFailed(`${reference} names an image by its id; name images by repository and tag or digest.`);
  let image: Docker.ImageInspectInfo;
  try {
    image = await docker.getImage(reference).inspect();
  } catch (error) {
    if (statusOf(error) !== 404 && statusOf(error) !== 400) throw error;
    // Not in the engine: pulled here, from a registry outside this host's network only, so
    // that what it is (its labels, its ONBUILD steps) is checked before the build uses it.
    try {
      await assertPublicRegistry(reference, allowed);
    } catch (refused) {
      if (refused instanceof RefusedRegistry) throw buildFailed(`${refused.message}.`);
      throw refused;
    }
    await pullImage(docker, reference, login);
    image = await docker.getImage(reference).inspect();
  }
  const refusal = refusalOf(reference, image, app, uuid);
  if (refusal !== null && isImageOfAnotherApp(refusal)) {
    throw buildFailed(`the Dockerfile refers to ${reference}, an image of another app; build from public or stack images only.`);
  }
  if (refusal !== null) throw buildFailed(`${refusal}.`);
  // A local image's ONBUILD triggers run in this build: they obey the Dockerfile's rules too.
  // Only FROM runs them, and a trigger cannot be FROM: the images they read have no triggers that run.
  const triggers = ((image.Config as { OnBuild?: string[] | null } | undefined)?.OnBuild ?? []).join('\n');
  if (triggers === '' || !withTriggers) return;
  let named: string[];
  try {
    named = readDockerfile(triggers.split('\n').map((line) => `ONBUILD ${line}`).join('\n')).images;
  } catch (error) {
    if (error instanceof UnreadableReference) throw buildFailed(`the ONBUILD steps of ${reference}: ${error.message}.`);
    throw error;
  }
  for (const inner of named) await assertImageReadable(docker, inner, app, uuid, allowed, login, false);
}

/**
 * Reads the commit's Dockerfile with the parser and refuses it when it reads an image the
 * app may not read, fetches a URL, or asks for mounts or networks of its own.
 * @throws RequestRejected `BUILD.FAILED`.
 */
export async function assertBuildReferences(
  docker: Docker,
  request: ImageBuildRequest,
  allowed: readonly string[],
  login: RegistryLogin | null = null,
): Promise<{ text: string; stageLines: number[] }> {
  const path = join(request.directory, 'Dockerfile');
  // Read only as what it is in the commit: a regular file, never through a link.
  const stats = await lstat(path).catch(() => null);
  if (stats === null || !stats.isFile()) throw buildFailed('the Dockerfile must be a regular file at the top of the commit.');
  if (stats.size > 1024 * 1024) throw buildFailed('the Dockerfile is larger than 1 MiB.');
  const text = await readFile(path, 'utf8');
  let read: ReturnType<typeof readDockerfile>;
  try {
    read = readDockerfile(text);
  } catch (error) {
    if (error instanceof UnreadableReference) throw buildFailed(`${error.message}.`);
    throw error;
  }
  for (const reference of read.images) await assertImageReadable(docker, reference, request.app, request.appUuid, allowed, login);
  return { text, stageLines: read.stageLines };
}
