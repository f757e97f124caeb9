/// <reference types="jest" />
import { execFile } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { pack } from 'tar-fs';
import type { CompileSession, InstalledBuildpack } from '@svc/core';
import { STACK_IMAGE_SCRIPT } from '../../src';
import { TEST_DOCKER_HOST } from './engine';

/** Writes files (path → content) under `dir`; names under `bin/` are made executable. */
export async function writeTree(dir: string, files: Record<string, string>): Promise<string> {
  for (const [path, content] of Object.entries(files)) {
    const file = join(dir, path);
    await mkdir(join(file, '..'), { recursive: true });
    await writeFile(file, content);
    if (path.startsWith('bin/') || path.endsWith('.sh')) await chmod(file, 0o755);
  }
  return dir;
}

/**
 * A buildpack for tests: detects a commit with `run.sh`, compiles by running it as
 * `sh run.sh BUILD_DIR CACHE_DIR ENV_DIR` (the test decides what a build does), releases a
 * `web` process.
 */
export const SCRIPT_BUILDPACK: Record<string, string> = {
  'bin/detect': '#!/bin/sh\n[ -f "$1/run.sh" ] || exit 1\necho Script\n',
  'bin/compile': '#!/bin/sh\ncd "$1" && exec sh ./run.sh "$@"\n',
  'bin/release': '#!/bin/sh\nprintf -- "---\\ndefault_process_types:\\n  web: sh -c \\"httpd -f -p \\$PORT\\"\\n"\n',
};

/** Runs the script that makes a stack image against the test engine. */
export function makeStackImage(image: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(STACK_IMAGE_SCRIPT, [image], { env: { ...process.env, DOCKER_HOST: TEST_DOCKER_HOST ?? '' }, timeout: 300_000 }, (error, _stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(),
    ),
  );
}

/**
 * Lays npm (the host's) onto a stack image, as the stack recipe with npm does: the modules
 * under /usr/local/lib/node_modules/npm, an `npm` command, and node trusting the CA bundle.
 */
export async function addNpm(docker: Docker, stack: string, image: string, npmDirectory: string): Promise<void> {
  const container = await docker.createContainer({ Image: stack, Cmd: ['/bin/true'], User: '0:0' });
  try {
    const modules = pack(npmDirectory, { map: (header) => ({ ...header, name: `usr/local/lib/node_modules/npm/${header.name}`, uid: 0, gid: 0 }) });
    await container.putArchive(modules, { path: '/' });
    const command = pack(join(__dirname, 'npm-command'), { map: (header) => ({ ...header, name: `usr/local/bin/${header.name}`, uid: 0, gid: 0 }) });
    await container.putArchive(command, { path: '/' });
    await container.commit({ repo: image.split(':')[0], tag: image.split(':')[1] ?? 'latest', changes: ['CMD ["/bin/sh"]', 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'] });
  } finally {
    await container.remove({ force: true });
  }
}

/** A session's compile output, and its failure if any. */
export async function compileWith(session: CompileSession, buildpack: InstalledBuildpack): Promise<{ lines: string[]; error: Error | null }> {
  const lines: string[] = [];
  try {
    await session.compile(buildpack, (line) => lines.push(line));
    return { lines, error: null };
  } catch (error) {
    return { lines, error: error as Error };
  }
}
