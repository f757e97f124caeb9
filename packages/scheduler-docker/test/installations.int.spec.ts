import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import type { ContainerSpec } from '@svc/core';
import { DockerScheduler, InstanceOfAnotherInstallation, LABELS, containerName } from '../src';
import { BUSYBOX, describeWithEngine, testScheduler, type TestScheduler } from './support/engine';

jest.setTimeout(120_000);

const A = 'aaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbb';

function webSpec(): ContainerSpec {
  const app = `inst-${process.pid.toString(36)}`;
  return {
    id: randomUUID(),
    app,
    type: 'web',
    num: 1,
    release: 1,
    image: BUSYBOX,
    command: 'exec httpd -f -p "$PORT" -h /etc',
    workdir: null,
    env: { SVC_APP: app, SVC_RELEASE: '1' },
    memory: null,
    cpu: null,
  };
}

function status(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/passwd', agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end();
  });
}

describeWithEngine('two installations given one instance on one engine (real engine)', () => {
  let a: TestScheduler;
  const spec = webSpec();

  beforeAll(async () => {
    a = await testScheduler({ installation: A });
    await expect(a.scheduler.start(spec)).resolves.toBe('up');
  });

  afterAll(async () => {
    await a?.cleanUp();
  });

  it("labels the installation's containers and its network with it", async () => {
    const info = await a.docker.getContainer(containerName(spec.id)).inspect();
    expect(info.Config.Labels).toMatchObject({ [LABELS.instance]: a.options.instance, [LABELS.installation]: A });
    const network = await a.docker.getNetwork(a.options.network ?? '').inspect();
    expect(network.Labels).toMatchObject({ [LABELS.instance]: a.options.instance, [LABELS.installation]: A });
  });

  it("refuses another installation's scheduler on that instance, and leaves the first one's container as it was", async () => {
    const before = await a.docker.getContainer(containerName(spec.id)).inspect();
    const b = new DockerScheduler({ ...a.options, installation: B });
    const refused = b.prepare();
    await expect(refused).rejects.toBeInstanceOf(InstanceOfAnotherInstallation);
    await expect(refused).rejects.toThrow(
      `DOCKER_INSTANCE: the instance "${a.options.instance}" on this engine belongs to another installation ` +
        `(container ${containerName(spec.id)}, network ${a.options.network}): give this installation its own DOCKER_INSTANCE, DOCKER_NETWORK and DOCKER_BRIDGE`,
    );
    // Nor do its start-up steps remove the other installation's container when called without the check.
    await b.survey();
    await expect(b.reapOrphans()).resolves.toBe(0);
    await b.stop(spec.id);
    await b.shutdown();

    const after = await a.docker.getContainer(containerName(spec.id)).inspect();
    expect(after.Id).toBe(before.Id);
    expect(after.State.Running).toBe(true);
    expect(after.State.StartedAt).toBe(before.State.StartedAt);
    const [endpoint] = a.scheduler.endpoints(spec.app, 'web');
    expect(await status(endpoint?.host ?? '', endpoint?.port ?? 0)).toBe(200);
  });

  it('lets another process of the same installation prepare and adopt the container', async () => {
    const before = await a.docker.getContainer(containerName(spec.id)).inspect();
    await a.scheduler.shutdown();
    const next = a.again();
    await expect(next.prepare()).resolves.toBeUndefined();
    await expect(next.start(spec)).resolves.toBe('up');
    expect((await a.docker.getContainer(containerName(spec.id)).inspect()).Id).toBe(before.Id);
    await expect(next.reapOrphans()).resolves.toBe(0);
    a.scheduler = next;
  });

  it('lets a scheduler that does not know its installation (embedded, as before) prepare on the instance', async () => {
    const unknown = new DockerScheduler({ ...a.options, installation: null });
    await expect(unknown.prepare()).resolves.toBeUndefined();
    await unknown.shutdown();
  });
});

describeWithEngine("a network another installation left with nothing on it (real engine)", () => {
  it('is removed and made again by the next installation on the instance, which then starts', async () => {
    const gone = await testScheduler({ installation: A });
    try {
      await gone.scheduler.prepare();
      await gone.scheduler.shutdown();
      const network = gone.options.network ?? '';
      expect((await gone.docker.getNetwork(network).inspect()).Labels).toMatchObject({ [LABELS.installation]: A });

      // A fresh installation with the same settings (its data and key were deleted): nothing of A runs.
      const fresh = new DockerScheduler({ ...gone.options, installation: B });
      await expect(fresh.prepare()).resolves.toBeUndefined();
      expect((await gone.docker.getNetwork(network).inspect()).Labels).toMatchObject({ [LABELS.installation]: B });
      const spec = webSpec();
      await expect(fresh.start(spec)).resolves.toBe('up');
      await fresh.stop(spec.id);
      await fresh.shutdown();
    } finally {
      await gone.cleanUp();
    }
  });
});
