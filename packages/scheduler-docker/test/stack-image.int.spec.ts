import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { DomainError } from '@svc/core';
import { APP_LABEL, DockerSourceCompiler, STACK_IMAGE_SCRIPT, cacheVolumeName, checkStackImage, unguardBuildBridge } from '../src';
import { SCRIPT_BUILDPACK, compileWith, writeTree } from './support/compile';
import { BUSYBOX, TEST_DOCKER_HOST, connectTestEngine, describeWithEngine } from './support/engine';

jest.setTimeout(300_000);

describeWithEngine('The stack image of buildpack builds (real engine)', () => {
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}s`;
  const missing = `svc-test/stack-made:${tag}`;
  const network = `svc-build-${tag}`;
  const bridge = `svcs${tag}`.slice(0, 15);
  const app = `stack-${tag}`;
  const uuid = `uuid-stack-${tag}`;
  let docker: Docker;
  let root: string;

  beforeAll(async () => {
    ({ docker } = await connectTestEngine(TEST_DOCKER_HOST, 'Docker engine'));
    root = await mkdtemp(join(tmpdir(), 'svc-stack-'));
  });

  afterAll(async () => {
    for (const c of await docker.listContainers({ all: true, filters: { label: [`${APP_LABEL}=${app}`] } })) await docker.getContainer(c.Id).remove({ force: true });
    await docker.getImage(missing).remove({ force: true }).catch(() => undefined);
    await docker.getVolume(cacheVolumeName(uuid)).remove().catch(() => undefined);
    await docker.getNetwork(network).remove().catch(() => undefined);
    await unguardBuildBridge(bridge);
    await rm(root, { recursive: true, force: true });
  });

  it('says at start-up whether the stack image is present, will be made on first need, or is missing with the command that makes it', async () => {
    await expect(checkStackImage({ docker, image: BUSYBOX, dockerHost: TEST_DOCKER_HOST })).resolves.toEqual({ state: 'present', message: `the stack image ${BUSYBOX} is present` });
    const willMake = await checkStackImage({ docker, image: missing, dockerHost: TEST_DOCKER_HOST });
    expect(willMake.state).toBe('will-make');
    expect(willMake.message).toContain(`the first buildpack build makes it (DOCKER_HOST=${TEST_DOCKER_HOST ?? ''} ${STACK_IMAGE_SCRIPT} ${missing})`);
    const refused = await checkStackImage({ docker, image: missing, dockerHost: TEST_DOCKER_HOST, make: false });
    expect(refused).toEqual({ state: 'missing', message: expect.stringContaining(`will not be made: buildpack builds fail until it is made with DOCKER_HOST=`) });
    const noBusybox = await checkStackImage({ docker, image: missing, dockerHost: TEST_DOCKER_HOST, busybox: join(root, 'no-busybox') });
    expect(noBusybox.state).toBe('missing');
  });

  it('refuses a build without the stack image when it may not make it, naming the exact command, and makes nothing', async () => {
    const compiler = new DockerSourceCompiler({ docker, stackImage: missing, dockerHost: TEST_DOCKER_HOST, makeStackImage: false, network, bridge });
    const dir = await writeTree(join(root, 'refused'), { 'run.sh': 'true\n' });
    const failure = (await compiler.open({ app, appUuid: uuid, directory: dir, env: {} }).catch((error: unknown) => error)) as DomainError;
    expect(DomainError.is(failure)).toBe(true);
    expect(failure.kind).toBe('unavailable');
    expect(failure.message).toBe(`The stack image ${missing} is missing; the operator makes it with: DOCKER_HOST=${TEST_DOCKER_HOST ?? ''} ${STACK_IMAGE_SCRIPT} ${missing}`);
    expect(await docker.listContainers({ all: true, filters: { label: [`${APP_LABEL}=${app}`] } })).toEqual([]);
  });

  it('makes the missing stack image on the first build that needs it, and builds on it', async () => {
    const compiler = new DockerSourceCompiler({ docker, stackImage: missing, dockerHost: TEST_DOCKER_HOST, network, bridge });
    const buildpack = { name: 'script', directory: await writeTree(join(root, 'buildpack'), SCRIPT_BUILDPACK) };
    const dir = await writeTree(join(root, 'made'), { 'run.sh': 'node -e "console.log(\'node \' + process.version)"\n' });
    const session = await compiler.open({ app, appUuid: uuid, directory: dir, env: {} });
    const { lines, error } = await compileWith(session, buildpack);
    await session.discard();
    expect(error).toBeNull();
    expect(lines).toEqual([`node ${process.version}`]);
    await expect(docker.getImage(missing).inspect()).resolves.toMatchObject({ Config: { WorkingDir: '/app' } });
  });
});
