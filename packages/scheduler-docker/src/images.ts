import type Docker from 'dockerode';
import { RequestRejected } from '@svc/core';
import { engineReason, engineStatus } from './engine';
import { authFor, type RegistryLogin } from './registry-login';
import { isImageIdReference, refusalOf } from './image-references';
import { digestNamesLocalImageById } from './build-checks';
import { RefusedRegistry, assertPublicRegistry } from './registry-hosts';

/** The port an app listens on inside its container when neither its config (PORT) nor its image (EXPOSE) names one. */
export const DEFAULT_CONTAINER_PORT = 5000;

/** A pull failed for a reason that is the request's (no such image, bad reference), not the platform's: answered 400. */
export class ImageNotFound extends RequestRejected {
  constructor(
    message: string,
    /** Why the image cannot be had, without the image's name: the engine's or registry's words for a failed pull. */
    readonly reason: string = message,
  ) {
    super('IMAGE.NOT_FOUND', message);
  }
}

/** A failed pull as the deploy reports it: the request's fault (no such image) or the platform's (registry unreachable). */
function pullFailure(image: string, error: unknown): Error {
  const reason = engineReason(error);
  const status = engineStatus(error);
  const message = `pulling ${image} failed: ${reason}`;
  if (status === 400 || status === 404 || /not found|manifest unknown|does not exist|invalid reference|repository name must/i.test(reason)) {
    return new ImageNotFound(message, reason);
  }
  return new Error(message);
}

/** The port the app listens on inside its container: config PORT, else the image's lowest exposed TCP port, else 5000. */
export function containerPortFor(env: Record<string, string>, image: Docker.ImageInspectInfo): number {
  const configured = Number(env.PORT);
  if (Number.isInteger(configured) && configured > 0 && configured < 65536) return configured;
  const exposed = Object.keys((image.Config as { ExposedPorts?: Record<string, unknown> } | undefined)?.ExposedPorts ?? {})
    .filter((p) => p.endsWith('/tcp'))
    .map((p) => Number(p.split('/')[0]))
    .filter((p) => Number.isInteger(p) && p > 0)
    .sort((a, b) => a - b);
  return exposed[0] ?? DEFAULT_CONTAINER_PORT;
}

/** The image's own command (ENTRYPOINT then CMD), as the engine would run it. */
export function imageCommand(image: Docker.ImageInspectInfo): string[] {
  const config = image.Config as { Cmd?: string[] | null; Entrypoint?: string[] | string | null } | undefined;
  const entrypoint = typeof config?.Entrypoint === 'string' ? [config.Entrypoint] : (config?.Entrypoint ?? []);
  return [...entrypoint, ...(config?.Cmd ?? [])];
}

/**
 * The check before a container of an image is made: a spec without a command needs an image
 * that has one.
 * @throws Error naming the image and the process type.
 */
export function assertRunnable(image: Docker.ImageInspectInfo, reference: string, command: string | null, type: string): void {
  if (command === null && imageCommand(image).length === 0) {
    throw new Error(`the image ${reference} has no command (CMD or ENTRYPOINT) and the build has no Procfile entry for ${type}`);
  }
}

/** The image, unless it is another app's or was found by its id. */
function ownedBy(app: string, image: string, info: Docker.ImageInspectInfo): Docker.ImageInspectInfo {
  const refusal = refusalOf(image, info, app, null);
  if (refusal !== null) throw new ImageNotFound(`the image ${refusal}: an app runs its own builds, or images from a registry`);
  return info;
}

/**
 * The images of an engine, pulled when it lacks them (or once per release with `always`): one
 * pull per image at a time, its progress told to `event` one line per layer and status.
 */
export class ImagePuller {
  private readonly pulls = new Map<string, Promise<void>>();
  private readonly pulledForRelease = new Set<string>();

  constructor(
    private readonly docker: Docker,
    private readonly policy: 'missing' | 'always',
    private readonly event: (app: string, message: string) => void,
    private readonly login: RegistryLogin | null = null,
    private readonly allowedRegistries: readonly string[] = [],
  ) {}

  /**
   * The image's description, pulled first when needed. An image the platform built for
   * another app (labelled `svc.app` with another id: `<app>:<version>` names are easy to
   * guess) is refused: an app runs its own builds and images from registries, never another
   * tenant's build.
   * @throws ImageNotFound when no registry has it, or it is another app's build; Error when the registry or engine fails.
   */
  async inspect(app: string, image: string, release: number): Promise<Docker.ImageInspectInfo> {
    if (isImageIdReference(image) || (await digestNamesLocalImageById(this.docker, image))) {
      throw new ImageNotFound(`the image ${image} is named by its id: name images by repository and tag or digest`);
    }
    return ownedBy(app, image, await this.described(app, image, release));
  }

  private async described(app: string, image: string, release: number): Promise<Docker.ImageInspectInfo> {
    const key = `${image}\n${release}`;
    const mustPull = this.policy === 'always' && !this.pulledForRelease.has(key);
    if (!mustPull) {
      try {
        return await this.docker.getImage(image).inspect();
      } catch (error) {
        if (engineStatus(error) !== 404) throw error;
      }
    }
    let pull = this.pulls.get(image);
    if (!pull) {
      pull = this.pull(app, image).finally(() => this.pulls.delete(image));
      this.pulls.set(image, pull);
    }
    await pull;
    this.pulledForRelease.add(key);
    return this.docker.getImage(image).inspect();
  }

  private async pull(app: string, image: string): Promise<void> {
    try {
      await assertPublicRegistry(image, [...this.allowedRegistries, ...(this.login === null ? [] : [this.login.registry])]);
    } catch (error) {
      if (error instanceof RefusedRegistry) throw new ImageNotFound(error.message);
      throw error;
    }
    this.event(app, `pulling image ${image}`);
    let stream: NodeJS.ReadableStream;
    try {
      const auth = authFor(this.login, image);
      stream = (await this.docker.pull(image, auth === undefined ? {} : { authconfig: auth })) as NodeJS.ReadableStream;
    } catch (error) {
      throw pullFailure(image, error);
    }
    const seen = new Set<string>();
    await new Promise<void>((resolve, reject) => {
      let failure: string | null = null;
      this.docker.modem.followProgress(
        stream,
        (error: Error | null) => {
          if (error) reject(pullFailure(image, error));
          else if (failure !== null) reject(pullFailure(image, new Error(failure)));
          else resolve();
        },
        (event: { status?: string; id?: string; error?: string; errorDetail?: { message?: string }; progressDetail?: { total?: number } }) => {
          if (event.error) {
            failure = event.errorDetail?.message ?? event.error;
            return;
          }
          // Byte counters would flood the log: one line per layer and status.
          if (!event.status || event.progressDetail?.total) return;
          const line = event.id ? `${event.id}: ${event.status}` : event.status;
          if (seen.has(line)) return;
          seen.add(line);
          this.event(app, `pull ${image}: ${line}`);
        },
      );
    });
  }
}
