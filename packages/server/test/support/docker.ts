import { LABELS, unguardHostFromBridge, type Docker } from '@svc/scheduler-docker';

/**
 * The end of a test on the shared Docker engine: every container its controller instance made
 * removed (whatever the test left), its platform network removed (each network holds one of the
 * engine's address pools), and the host guard of that network's bridge taken down.
 */
export async function removeEngineInstance(docker: Docker, names: { instance: string; network: string; bridge: string }): Promise<void> {
  const left = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${names.instance}`] } });
  await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  await docker.getNetwork(names.network).remove().catch(() => undefined);
  await unguardHostFromBridge(names.bridge);
}
