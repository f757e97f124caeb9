import type Docker from 'dockerode';
import { dockerAt } from '../../src';

/** The engine the integration tests use (`TEST_DOCKER_HOST`), or null when they are not to run. */
export const TEST_DOCKER_HOST: string | null = process.env.TEST_DOCKER_HOST?.trim() ? process.env.TEST_DOCKER_HOST.trim() : null;

/** The images CI's engine script makes (`.ci/docker-engine.sh`): busybox's applets, and the host's node with its libraries. */
export const BUSYBOX_IMAGE = 'svc-test/busybox:1';
export const NODE_IMAGE = 'svc-test/node:20';

/**
 * A describe block that needs a Docker engine: without `TEST_DOCKER_HOST` it says why it
 * does not run and is skipped, except under CI=true, where it fails.
 */
export function describeWithEngine(name: string, body: (docker: () => Docker) => void): void {
  if (TEST_DOCKER_HOST === null) {
    if (process.env.CI === 'true') {
      describe(name, () => {
        it('needs a Docker engine', () => {
          throw new Error('TEST_DOCKER_HOST is not set, and CI=true requires these tests to run');
        });
      });
      return;
    }
    process.stderr.write(`${name}: skipped, TEST_DOCKER_HOST is not set (e.g. unix:///run/svcdev-docker/docker.sock)\n`);
    describe.skip(name, () => body(() => {
      throw new Error('no engine');
    }));
    return;
  }
  const docker = dockerAt(TEST_DOCKER_HOST);
  describe(name, () => body(() => docker));
}
