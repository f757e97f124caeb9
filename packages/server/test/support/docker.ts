import { randomBytes } from 'node:crypto';
import { LABELS, unguardBuildBridge, unguardHostFromBridge, type Docker } from '@svc/scheduler-docker';

/**
 * A build network and bridge of a test's own (BUILDPACK_NETWORK, BUILDPACK_BRIDGE), for a
 * controller on the shared test engine: test files run side by side, and on the default
 * `svc-build` a teardown in one would remove the network and the builds of another, and each
 * controller's start installs the guards anew (flushing the egress chain) while another builds.
 */
export function ownBuildNetwork(): { BUILDPACK_NETWORK: string; BUILDPACK_BRIDGE: string } {
  const tag = randomBytes(5).toString('hex');
  return { BUILDPACK_NETWORK: `svc-build-${tag}`, BUILDPACK_BRIDGE: `svcbn${tag}` };
}

/**
 * The end of a test on the shared Docker engine: every container its controller instance made
 * removed (whatever the test left), its platform network removed (each network holds one of the
 * engine's address pools), and the host guard of that network's bridge taken down; with `build`,
 * its own build network too, with the containers on it and both its guards.
 */
export async function removeEngineInstance(docker: Docker, names: { instance: string; network: string; bridge: string; build?: { network: string; bridge: string } }): Promise<void> {
  const left = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${names.instance}`] } });
  await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  await docker.getNetwork(names.network).remove().catch(() => undefined);
  await unguardHostFromBridge(names.bridge);
  if (names.build !== undefined) await removeBuildNetwork(docker, names.build);
}

/** Removes a test's own build network (see {@link ownBuildNetwork}), the containers left on it, and both guards of its bridge. */
export async function removeBuildNetwork(docker: Docker, build: { network: string; bridge: string }): Promise<void> {
  const left = await docker.listContainers({ all: true, filters: { network: [build.network] } }).catch(() => []);
  await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  await docker.getNetwork(build.network).remove().catch(() => undefined);
  await unguardBuildBridge(build.bridge);
}
