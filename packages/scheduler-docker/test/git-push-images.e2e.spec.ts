import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeOnSqlite, ownBuildNetwork, removeBuildNetwork, signUp, useServer, type Session } from '../../server/test/support';
import { WorkingCopy, keyPair, nodeApp, type KeyPair } from '../../builder-git/test/support/git-client';
import { APP_LABEL, APP_UID } from '../src';
import { BUSYBOX_IMAGE, NODE_IMAGE, TEST_DOCKER_HOST, describeWithEngineClient as describeWithEngine, imageExists, runIn } from './support/engine';

interface BuildJson {
  uuid: string;
  image: string;
  sha: string;
}

interface ReleaseJson {
  version: number;
  build: string | null;
}



/** A Dockerfile app: busybox with the commit's message file, printing it. */
const dockerApp = (message: string): Record<string, string> => ({
  Dockerfile: [
    `FROM ${BUSYBOX_IMAGE}`,
    'COPY message.txt /srv/message.txt',
    'RUN echo "build step saw $(cat /srv/message.txt)"',
    'CMD ["cat", "/srv/message.txt"]',
    '',
  ].join('\n'),
  'message.txt': `${message}\n`,
});

/**
 * The whole controller with image builds on (the git server, the Docker image builder, the
 * memory scheduler, which records containers without running them): git push builds
 * Dockerfile and Procfile apps into `<app>:<version>` images, a rollback names the exact
 * image again, a failing build is refused and leaves nothing, old images go.
 */
describeWithEngine('git push builds images', (engine) => {
  describeOnSqlite('git push builds images', 'builds and releases recorded in releases.e2e and postgres.int, the build slots in build-slot-store.int', (backend) => {
    const suffix = `${Date.now().toString(36)}${Math.floor(Math.random() * 1000)}`;
    const web = `dweb-${suffix}`;
    const proc = `dproc-${suffix}`;
    const build = ownBuildNetwork();
    const server = useServer(backend, {
      GIT_SSH_PORT: '0',
      ROUTER_PORT: 'off',
      SCHEDULER: 'memory',
      IMAGE_BUILDER: 'docker',
      DOCKER_HOST: TEST_DOCKER_HOST ?? '',
      STACK_IMAGE: NODE_IMAGE,
      BUILD_TIMEOUT_SECONDS: '120',
      BUILD_RETENTION: '2',
      ...build,
    });
    let root: string;
    let alice: Session;
    let key: KeyPair;
    let webCopy: WorkingCopy;
    const gitUrl = (app: string): string => `ssh://git@127.0.0.1:${server.current.gitPort as number}/${app}.git`;
    const builds = async (app: string): Promise<BuildJson[]> => (await alice.api.get<{ results: BuildJson[] }>(`/v1/apps/${app}/builds/`)).body.results;
    const releases = async (app: string): Promise<ReleaseJson[]> => (await alice.api.get<{ results: ReleaseJson[] }>(`/v1/apps/${app}/releases/`)).body.results;

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'svc-git-images-'));
      await signUp(server.api, 'admin');
      alice = await signUp(server.api, 'alice');
      key = await keyPair(root, 'alice');
      expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: key.publicKey })).status).toBe(201);
      for (const app of [web, proc]) expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
      webCopy = await WorkingCopy.init(join(root, web), join(root, 'home'), key);
      await webCopy.expectGit(['remote', 'add', 'svc', gitUrl(web)]);
    });

    afterAll(async () => {
      for (const app of [web, proc]) {
        const images = await engine().listImages({ filters: JSON.stringify({ label: [`${APP_LABEL}=${app}`] }) });
        for (const image of images) await engine().getImage(image.Id).remove({ force: true }).catch(() => undefined);
      }
      await removeBuildNetwork(engine(), { network: build.BUILDPACK_NETWORK, bridge: build.BUILDPACK_BRIDGE });
      await rm(root, { recursive: true, force: true });
    });

    it('a Dockerfile push is built by the engine, its output shown as remote: lines, and released as <app>:2', async () => {
      const sha = await webCopy.commit(dockerApp('first message'), 'first');

      const outcome = await webCopy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toMatch(new RegExp(`remote:        Step 1/\\d+ : FROM ${BUSYBOX_IMAGE}`));
      expect(outcome.stderr).toContain('remote:        build step saw first message');
      expect(outcome.stderr).toContain('remote: -----> Released v2 (cmd=1)');
      expect(await builds(web)).toEqual([expect.objectContaining({ image: `${web}:2`, sha })]);
      const image = await engine().getImage(`${web}:2`).inspect();
      expect(image.Config.Cmd).toEqual(['cat', '/srv/message.txt']);
      expect(image.Config.Labels?.[APP_LABEL]).toBe(web);
      expect(await runIn(engine(), `${web}:2`)).toBe('first message\n');
    });

    it('a second push is released as <app>:3, and a rollback runs the exact image of v2 again', async () => {
      await webCopy.commit(dockerApp('second message'), 'second');
      expect((await webCopy.git(['push', 'svc', 'main'])).code).toBe(0);
      expect(await runIn(engine(), `${web}:3`)).toBe('second message\n');

      const rollback = await alice.api.post('/v1/apps/' + web + '/releases/rollback/', { version: 2 });

      expect({ status: rollback.status, body: rollback.body }).toEqual({ status: 201, body: { version: 4 } });
      const [v4, , v2] = await releases(web);
      expect(v4).toMatchObject({ version: 4, build: v2?.build });
      const build = (await builds(web)).find((b) => b.uuid === v4?.build);
      expect(build?.image).toBe(`${web}:2`);
      expect(await runIn(engine(), `${web}:2`)).toBe('first message\n');
    });

    it('a push whose build fails is refused with the engine\'s reason and keeps no release, build or image', async () => {
      const before = await engine().listImages({ all: true, filters: JSON.stringify({ label: [`${APP_LABEL}=${web}`] }) });
      await webCopy.commit({ Dockerfile: `FROM ${BUSYBOX_IMAGE}\nRUN echo layer-before-failure > /x\nRUN echo failing-now && exit 7\n` }, 'broken');

      const outcome = await webCopy.git(['push', 'svc', 'main']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('remote:        failing-now');
      expect(outcome.stderr).toMatch(/The image build failed: .*returned a non-zero code: 7/);
      expect(outcome.stderr).toContain('no release was made and the branch did not move');
      expect((await releases(web)).map((r) => r.version)).toEqual([4, 3, 2, 1]);
      expect(await builds(web)).toHaveLength(2);
      expect(await imageExists(engine(), `${web}:5`)).toBe(false);
      const base = (await engine().getImage(BUSYBOX_IMAGE).inspect()).Id.slice('sha256:'.length, 'sha256:'.length + 12);
      const layers = [...outcome.stderr.matchAll(/remote: {8} ---> ([0-9a-f]{12})\s*$/gm)].map((m) => m[1] as string).filter((id) => id !== base);
      expect(layers.length).toBeGreaterThanOrEqual(1);
      for (const layer of layers) expect(await imageExists(engine(), layer)).toBe(false);
      const after = await engine().listImages({ all: true, filters: JSON.stringify({ label: [`${APP_LABEL}=${web}`] }) });
      expect(after.map((i) => i.Id).sort()).toEqual(before.map((i) => i.Id).sort());
      await webCopy.expectGit(['reset', '--quiet', '--hard', 'HEAD~1']);
    });

    it('a push past BUILD_RETENTION removes the image no kept build names, and that release can no longer be rolled back to', async () => {
      await webCopy.commit(dockerApp('third message'), 'third');

      expect((await webCopy.git(['push', 'svc', 'main'])).code).toBe(0);

      // Kept: the builds of v5 (new) and v4 (myapp:2 again); v3's image goes.
      expect(await imageExists(engine(), `${web}:5`)).toBe(true);
      expect(await imageExists(engine(), `${web}:2`)).toBe(true);
      expect(await imageExists(engine(), `${web}:3`)).toBe(false);
      const refused = await alice.api.post<{ detail: string }>('/v1/apps/' + web + '/releases/rollback/', { version: 3 });
      expect(refused.status).toBe(400);
      expect(refused.body.detail).toMatch(/can no longer be rolled back to/);
    });

    it('a push without a Dockerfile is compiled on the stack image with buildpacks, its files in /app owned by the app user, who runs it', async () => {
      const copy = await WorkingCopy.init(join(root, proc), join(root, 'home'), key);
      await copy.expectGit(['remote', 'add', 'svc', gitUrl(proc)]);
      await copy.commit(nodeApp('hello from the stack'), 'first');

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain('remote: -----> Compiling with buildpacks');
      expect(outcome.stderr).toContain('remote:        Detected Node.js');
      expect(outcome.stderr).toContain('remote:        Process types: web (from the Procfile)');
      expect(outcome.stderr).toContain('remote: -----> Released v2 (web=1)');
      expect(await builds(proc)).toEqual([expect.objectContaining({ image: `${proc}:2` })]);
      const [image, stack] = await Promise.all([engine().getImage(`${proc}:2`).inspect(), engine().getImage(NODE_IMAGE).inspect()]);
      // On the stack's layers, labelled with its app, run as the app user.
      expect(image.RootFS.Layers?.slice(0, stack.RootFS.Layers?.length)).toEqual(stack.RootFS.Layers);
      expect(image.Config.Labels?.[APP_LABEL]).toBe(proc);
      expect(image.Config.User).toBe(`${APP_UID}:${APP_UID}`);
      const probe = "const fs = require('fs'); for (const f of ['/app', '/app/server.js', '/app/Procfile']) process.stdout.write(`${f} ${fs.statSync(f).uid} ${fs.statSync(f).gid}\\n`)";
      expect(await runIn(engine(), `${proc}:2`, ['node', '-e', probe])).toBe(
        [`/app ${APP_UID} ${APP_UID}`, `/app/server.js ${APP_UID} ${APP_UID}`, `/app/Procfile ${APP_UID} ${APP_UID}`, ''].join('\n'),
      );
    });
  });
});
