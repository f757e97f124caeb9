import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startController, type ControllerProcess } from './processes/controller-process';
import { buildWorkspace } from './processes/workspace-build';

jest.setTimeout(180_000);

/*
 * The controller as `npm start` runs it (a process of its own): once it serves, it prints one
 * plain line with where the API, the dashboard, the apps and the git remotes are, and each
 * address in it answers as what it says it is.
 */

/** The first line an SSH server sends, from `port` on this machine. */
function sshBanner(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no banner within 10 s')));
    socket.once('error', reject);
    socket.once('data', (chunk: Buffer) => {
      socket.destroy();
      resolve(chunk.toString('utf8').split('\r\n')[0] ?? '');
    });
  });
}

describe('the ready line of a controller process', () => {
  let dataDir: string;
  let controller: ControllerProcess | null = null;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-ready-line-'));
  });

  afterAll(async () => {
    await controller?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prints the API, dashboard, apps and git addresses with the ports it bound, each answering', async () => {
    controller = await startController(await buildWorkspace(), { env: { DATA_DIR: dataDir, ROUTER_PORT: '0', GIT_SSH_PORT: '0', PLATFORM_DOMAIN: 'apps.test' } });
    let line: string | undefined;
    for (let tries = 0; tries < 100 && line === undefined; tries++) {
      line = controller.output().split('\n').find((text) => text.startsWith('ready: '));
      if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const apiPort = new URL(controller.url).port;
    const match = /^ready: API (http:\/\/127\.0\.0\.1:(\d+)\/) {2}dashboard (\S+) {2}apps http:\/\/<app>\.apps\.test:(\d+)\/ {2}git ssh:\/\/git@127\.0\.0\.1:(\d+)\/<app>\.git$/.exec(line ?? '');
    expect({ line, matched: match !== null }).toEqual({ line: expect.any(String), matched: true });
    const [, api, port, dashboard, routerPort, gitPort] = match as RegExpExecArray;
    expect(port).toBe(apiPort);
    expect(dashboard).toBe(`${api}dashboard/`);
    expect(await (await fetch(`${api}readyz`)).json()).toEqual({ status: 'ready' });
    expect((await fetch(dashboard as string, { redirect: 'manual' })).status).not.toBe(404);
    // The router answers for any app name under the platform domain (an unknown one: 404 from the router itself).
    const routed = await fetch(`http://127.0.0.1:${routerPort as string}/`, { headers: { Host: 'nosuchapp.apps.test' } });
    expect([routerPort, routed.status]).toEqual([expect.not.stringMatching(new RegExp(`^(${apiPort}|0)$`)), 404]);
    expect(await sshBanner(Number(gitPort))).toBe('SSH-2.0-svc-git');
  });
});
