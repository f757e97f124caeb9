import { rm } from 'node:fs/promises';
import { LABELS, type Docker } from '@svc/scheduler-docker';
import type { RunningServer } from '../../src';

/**
 * The end of a test on a swarm: the server closed, every service its controller instance made
 * removed from the manager (whatever the test left), and its data directory deleted.
 */
export async function closeSwarmTest(parts: { server?: RunningServer; manager?: Docker; instance: string; dataDir?: string }): Promise<void> {
  await parts.server?.close();
  const manager = parts.manager;
  if (manager) {
    const left = await manager.listServices({ filters: { label: [`${LABELS.instance}=${parts.instance}`] } });
    await Promise.all(left.map((s) => manager.getService(s.ID as string).remove().catch(() => undefined)));
  }
  if (parts.dataDir) await rm(parts.dataDir, { recursive: true, force: true });
}
