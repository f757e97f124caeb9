import type Docker from 'dockerode';
import { CONTROL, buildErrorMessage } from './build-output';
import { authFor, type RegistryLogin } from './registry-login';

/** The tag a build is pushed under (`<registry>/<app>:build-<image id>`), which prune knows as the builder's own. */
export const PUSHED_TAG = /^build-[0-9a-f]{16}$/;

/** One message of the engine's push stream. */
interface PushMessage {
  status?: string;
  id?: string;
  error?: string;
  errorDetail?: { message?: string };
  progressDetail?: { total?: number };
  aux?: { Digest?: string };
}

/** Where and how a built image is pushed. */
export interface PushTarget {
  /** `host[:port][/path]`, without a trailing slash. */
  registry: string;
  /** The registry's login; null: it takes pushes without one. */
  login: RegistryLogin | null;
  /** Stops the push (the build's time limit). */
  signal: AbortSignal;
  /** The build's time limit, for the message when the signal stopped the push. */
  timeoutMs: number;
}

/**
 * Pushes a built image of `app` to the registry, its progress told to the pusher, and
 * resolves with its reference by digest (`<registry>/<app>@sha256:...`), the reference every
 * node pulls the exact image by. When the push fails, the image is removed (nothing of a
 * build the nodes cannot pull is kept), the pusher is told why, and the error says so.
 * @throws Error naming the registry and the reason.
 */
export async function pushBuild(docker: Docker, app: string, id: string, target: PushTarget, output: (line: string) => void): Promise<string> {
  try {
    return await pushImage(docker, app, id, target, output);
  } catch (error) {
    await docker.getImage(id).remove({ force: true }).catch(() => undefined);
    const reason = target.signal.aborted ? `no answer within ${Math.round(target.timeoutMs / 1000)} seconds` : buildErrorMessage(error).trim();
    output(`The push to ${target.registry} failed: ${reason.replace(CONTROL, '')}`);
    throw new Error(`pushing the image to the registry ${target.registry} failed: ${reason}`);
  }
}

/** Names a built image `<registry>/<app>:build-<id>` and pushes it, one line of progress per layer and status. */
async function pushImage(docker: Docker, app: string, id: string, target: PushTarget, output: (line: string) => void): Promise<string> {
  const { registry, signal } = target;
  const repository = `${registry}/${app}`;
  const tag = `build-${id.replace(/^sha256:/, '').slice(0, 16)}`;
  await docker.getImage(id).tag({ repo: repository, tag });
  output(`Pushing ${repository}:${tag}`);
  // Without a login the credential is empty: the engine wants the header all the same.
  const authconfig = authFor(target.login, repository) ?? {};
  const stream = (await docker.getImage(repository).push({ tag, authconfig, abortSignal: signal } as Docker.ImagePushOptions)) as NodeJS.ReadableStream;
  let digest: string | null = null;
  let failure: string | null = null;
  const seen = new Set<string>();
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null) => (error ? reject(error) : resolve()),
      (message: PushMessage) => {
        if (message.error !== undefined || message.errorDetail !== undefined) failure = message.errorDetail?.message ?? message.error ?? 'the push failed';
        if (typeof message.aux?.Digest === 'string') digest = message.aux.Digest;
        // Byte counters would flood the output: one line per layer and status.
        if (!message.status || message.progressDetail?.total) return;
        const line = (message.id ? `${message.id}: ${message.status}` : message.status).replace(CONTROL, '').trim();
        if (line === '' || seen.has(line)) return;
        seen.add(line);
        output(line);
      },
    );
  });
  if (signal.aborted) throw new Error('The push was stopped');
  if (failure !== null) throw new Error(failure);
  const pushed = digest as string | null;
  if (pushed === null || !/^sha256:[0-9a-f]{64}$/.test(pushed)) throw new Error('the registry accepted the image without naming its digest');
  const reference = `${repository}@${pushed}`;
  output(`Pushed ${reference}`);
  return reference;
}
