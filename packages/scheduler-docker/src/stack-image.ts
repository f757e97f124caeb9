import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type Docker from 'dockerode';
import { Unavailable } from '@svc/core';
import { engineStatus } from './engine';

// In the repository (and the controller's image) this package is packages/scheduler-docker and
// the script is the repository's; an installed package (node_modules/@svc/…) holds its own
// copy, which its tarball gets when it is packed (scripts/package-files.mjs). The copy exists
// in the checkout only while a pack runs, so the checkout never reads it.
const IN_CHECKOUT = basename(resolve(__dirname, '../..')) === 'packages';

/** The script that makes a stack image offline: the repository's in a checkout, else the installed package's. */
export const STACK_IMAGE_SCRIPT = resolve(__dirname, IN_CHECKOUT ? '../../../scripts/make-stack-image.sh' : '../scripts/make-stack-image.sh');

/** Where the stack image comes from when the engine lacks it. */
export interface StackImageSource {
  /** The engine client. */
  docker: Docker;
  /** The stack image's name (`STACK_IMAGE`). */
  image: string;
  /** The engine's address as the docker client takes it (`DOCKER_HOST`), for the script; null: the client's default. */
  dockerHost: string | null;
  /** The script that makes it; default {@link STACK_IMAGE_SCRIPT}. */
  script?: string;
  /** The static busybox the script copies; default `/bin/busybox`. */
  busybox?: string;
  /** Make the image with the script on first need: true, false, or absent (made when the script and busybox are present). */
  make?: boolean;
}

/** What the start-up check found: the image is there, will be made on first need, or is missing and will not be. */
export interface StackImageCheck {
  state: 'present' | 'will-make' | 'missing';
  /** One line for the operator's log. */
  message: string;
}

/** The command that makes the stack image, as an operator types it. */
export function stackImageCommand(source: Pick<StackImageSource, 'image' | 'dockerHost' | 'script'>): string {
  const host = source.dockerHost ? `DOCKER_HOST=${shellWord(source.dockerHost)} ` : '';
  return `${host}${shellWord(source.script ?? STACK_IMAGE_SCRIPT)} ${shellWord(source.image)}`;
}

function shellWord(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function imagePresent(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (error) {
    if (engineStatus(error) === 404) return false;
    throw error;
  }
}

/** Whether the script may make the image: the option, or (unset) whether the script and busybox are there. */
async function mayMake(source: StackImageSource): Promise<boolean> {
  if (source.make === false) return false;
  const ready = (await executable(source.script ?? STACK_IMAGE_SCRIPT)) && (await executable(source.busybox ?? '/bin/busybox'));
  return source.make === true || ready;
}

/**
 * The start-up check of the stack image buildpack builds run on: present, to be made on the
 * first build that needs it, or missing (with the command that makes it).
 * @throws Error when the engine does not answer.
 */
export async function checkStackImage(source: StackImageSource): Promise<StackImageCheck> {
  if (await imagePresent(source.docker, source.image)) return { state: 'present', message: `the stack image ${source.image} is present` };
  if (await mayMake(source)) {
    return { state: 'will-make', message: `the stack image ${source.image} is missing: the first buildpack build makes it (${stackImageCommand(source)})` };
  }
  return {
    state: 'missing',
    message: `the stack image ${source.image} is missing and will not be made: buildpack builds fail until it is made with ${stackImageCommand(source)}`,
  };
}

/**
 * Makes sure the stack image is in the engine: makes it with the script when it may (once
 * at a time), else refuses.
 * @throws Unavailable `BUILDER.FAILED` naming the command to run when it is missing and cannot be made.
 */
export async function ensureStackImage(source: StackImageSource, output: (line: string) => void): Promise<void> {
  if (await imagePresent(source.docker, source.image)) return;
  const command = stackImageCommand(source);
  if (!(await mayMake(source))) {
    throw new Unavailable('BUILDER.FAILED', `The stack image ${source.image} is missing; the operator makes it with: ${command}`);
  }
  output(`Making the stack image ${source.image} (first use)`);
  const env: NodeJS.ProcessEnv = { ...process.env, ...(source.busybox ? { BUSYBOX: source.busybox } : {}) };
  if (source.dockerHost) env.DOCKER_HOST = source.dockerHost;
  else delete env.DOCKER_HOST;
  const made = await new Promise<{ ok: boolean; text: string }>((done) =>
    execFile(source.script ?? STACK_IMAGE_SCRIPT, [source.image], { env, timeout: 5 * 60_000, maxBuffer: 1024 * 1024 }, (error, stdout, stderr) =>
      done({ ok: error === null, text: `${stdout}${stderr}`.trim() || (error?.message ?? '') }),
    ),
  );
  if (!made.ok || !(await imagePresent(source.docker, source.image))) {
    throw new Unavailable('BUILDER.FAILED', `The stack image ${source.image} could not be made (${made.text.split('\n').slice(-3).join(' ')}); the operator makes it with: ${command}`);
  }
  output(made.text.split('\n').pop() ?? `Made ${source.image}`);
}
