import { mkdtemp, mkdir, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'tar-fs';
import { DomainError } from '@svc/core';
import { APP_LABEL, DockerImageBuilder } from '../src';
import { confinesRoot } from '../src/build-checks';
import { BuildCgroups, CGROUP_ROOT } from '../src/build-cgroups';
import { BUSYBOX_IMAGE, TEST_REGISTRY, describeWithEngineClient as describeWithEngine, imageExists, itWithRegistry } from './support/engine';

async function failureOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (DomainError.is(error)) return error.message;
    throw error;
  }
  throw new Error('Expected the build to fail');
}

describe('the engine confines build steps', () => {
  it('only with user-namespace remapping or rootless mode', () => {
    expect(confinesRoot(['name=apparmor', 'name=seccomp,profile=default', 'name=userns'])).toBe(true);
    expect(confinesRoot(['name=seccomp,profile=default', 'name=rootless'])).toBe(true);
    expect(confinesRoot(['name=seccomp,profile=default', 'name=cgroupns'])).toBe(false);
    expect(confinesRoot(undefined)).toBe(false);
  });
});

describeWithEngine('hostile Dockerfile builds against a real engine', (engine) => {
  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  const victim = `victim-${suffix}`;
  const thief = `thief-${suffix}`;
  // This file's own parent: other builds on the shared engine keep theirs under the default one.
  const cgroupParent = `svc-builds-test-${suffix}`;
  const cgroups = new BuildCgroups(CGROUP_ROOT, cgroupParent);
  let root: string;
  let builder: DockerImageBuilder;
  let victimId: string;
  let victimLayer: string;

  const checkout = async (name: string, files: Record<string, string>): Promise<string> => {
    const dir = join(root, name);
    for (const [path, content] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    return dir;
  };
  const build = async (name: string, dockerfile: string, app = thief, own: DockerImageBuilder = builder): Promise<string> =>
    own.build({ app, appUuid: `uuid-${app}`, directory: await checkout(name, { Dockerfile: dockerfile }), kind: 'dockerfile' }, () => undefined);

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-hostile-builds-'));
    builder = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000, pidsLimit: 64, imageLimitBytes: 16 * 1024 * 1024, cgroupParent });
    // The victim's build: a secret in a layer, removed in the next one.
    victimId = await build('victim', `FROM ${BUSYBOX_IMAGE}\nRUN echo s3cret > /secret\nRUN rm /secret\n`, victim);
    await builder.tag(victimId, `${victim}:1`);
    victimLayer = (await engine().getImage(victimId).inspect()).Parent;
  }, 180_000);

  afterAll(async () => {
    for (const name of [victim, thief]) {
      const images = await engine().listImages({ filters: JSON.stringify({ label: [`${APP_LABEL}=${name}`] }) });
      for (const image of images) await engine().getImage(image.Id).remove({ force: true }).catch(() => undefined);
    }
    await rm(root, { recursive: true, force: true });
    for (const hierarchy of await readdir(CGROUP_ROOT)) await rmdir(join(CGROUP_ROOT, hierarchy, cgroupParent)).catch(() => undefined);
  });

  it('refuses another app\'s image however the Dockerfile writes its name', async () => {
    const [name, tag] = [victim, '1'];
    const half = Math.floor(name.length / 2);
    const dockerfiles = [
      `FROM "${name}":${tag}`,
      `FROM ${name.slice(0, half)}\\${name.slice(half)}:${tag}`,
      `FROM ${name.slice(0, half)}\\\n${name.slice(half)}:${tag}`,
      `ARG A=${name.slice(0, half)}\nARG B="\${A}${name.slice(half)}"\nFROM $B:${tag}`,
      `FROM \${UNSET:-${name}:${tag}}`,
      `# escape=\`\nFROM ${name.slice(0, half)}\`\n${name.slice(half)}:${tag}`,
      `FROM ${BUSYBOX_IMAGE}\nCOPY --from=${name}:${tag} /secret /s`,
      `FROM ${BUSYBOX_IMAGE}\nONBUILD COPY --from=${name}:${tag} / /`,
    ];
    for (const [index, dockerfile] of dockerfiles.entries()) {
      expect(await failureOf(build(`named-${index}`, `${dockerfile}\n`))).toMatch(/another app/);
    }
    // Hidden in the ONBUILD steps of an image made outside the platform's builder (unlabelled).
    const base = `svc-hostile/onbuild-copy-${suffix}:1`;
    const context = pack(await checkout('onbuild-copy', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nONBUILD COPY --from=${name}:${tag} /secret /s\n` }));
    const stream = await engine().buildImage(context as never, { t: base });
    await new Promise<void>((done, fail) => engine().modem.followProgress(stream, (error: Error | null) => (error ? fail(error) : done())));
    try {
      expect(await failureOf(build('onbuild-copy-use', `FROM ${base}\n`))).toMatch(/another app/);
    } finally {
      await engine().getImage(base).remove({ force: true });
    }
  }, 120_000);

  it('labels every intermediate image of a build with its app, not only the last one', async () => {
    const parent = await engine().getImage(victimLayer).inspect();
    expect(parent.Config.Labels).toMatchObject({ [APP_LABEL]: victim, 'svc.app-uuid': `uuid-${victim}` });
  });

  it('refuses an image named by its id or an id prefix, the unnamed layers of another app\'s build included', async () => {
    const short = victimLayer.replace(/^sha256:/, '').slice(0, 12);
    for (const reference of [victimId, victimLayer, short, victimId.replace(/^sha256:/, '').slice(0, 16), short.slice(0, 6)]) {
      expect(await failureOf(build('by-id', `FROM ${reference}\nRUN cat /secret\n`))).toMatch(/by its id/);
      expect(await failureOf(build('copy-by-id', `FROM ${BUSYBOX_IMAGE}\nCOPY --from=${reference} /secret /s\n`))).toMatch(/by its id/);
    }
    // Any name with the image id as its digest: the engine finds the image by that id.
    expect(await failureOf(build('digest-id', `FROM svc-test/busybox@${victimLayer}\nRUN cat /secret\n`))).toMatch(/by its id/);
  }, 120_000);

  it('refuses remote ADD and pulls from this host, link-local and private registries', async () => {
    expect(await failureOf(build('add-url', `FROM ${BUSYBOX_IMAGE}\nADD http://127.0.0.1:2375/info /info\n`))).toMatch(/ADD may not fetch/);
    expect(await failureOf(build('add-meta', `FROM ${BUSYBOX_IMAGE}\nADD "http"://169.254.169.254/latest/ /m\n`))).toMatch(/ADD may not fetch/);
    for (const reference of ['127.0.0.1:5000/x', '169.254.169.254/x', 'localhost:5000/x:1', '10.0.0.1/x', '[::1]:5000/x']) {
      expect(await failureOf(build('pull-inside', `FROM ${reference}\n`))).toMatch(/refused/);
    }
    expect(await failureOf(build('mount', `FROM ${BUSYBOX_IMAGE}\nRUN --mount=from=${victim}:1,target=/v cat /v/secret\n`))).toMatch(/RUN --mount/);
  }, 120_000);

  it('stops a fork bomb at the process limit', async () => {
    const lines: string[] = [];
    const started = Date.now();
    const message = await failureOf(
      builder.build(
        { app: thief, appUuid: `uuid-${thief}`, directory: await checkout('fork-bomb', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nRUN bomb() { bomb | bomb & }; bomb; sleep 20; echo survived\n` }), kind: 'dockerfile' },
        (line) => lines.push(line),
      ),
    ).catch((error: Error) => error.message);
    // Either the shell dies on a failed fork, or the step ends with the bomb held at the limit.
    expect(`${message}\n${lines.join('\n')}`).toMatch(/can't fork|Resource temporarily unavailable|non-zero code|survived/);
    expect(Date.now() - started).toBeLessThan(90_000);
    // Other builds still run once it is over.
    expect(await build('after-bomb', `FROM ${BUSYBOX_IMAGE}\nRUN echo fine\n`)).toMatch(/^sha256:/);
    expect(await cgroups.present()).toEqual([]);
  }, 180_000);

  it('gives each build its own process limit: a step starts at most BUILD_PIDS_LIMIT processes, while another build does the same', async () => {
    // Each `sleep &` is one more process of the step; the shell itself is one.
    const counting = `FROM ${BUSYBOX_IMAGE}\nRUN n=0; while [ $n -lt 200 ]; do sleep 60 & n=$((n+1)); echo started=$n; done\n`;
    const countOf = async (name: string): Promise<number> => {
      const lines: string[] = [];
      const directory = await checkout(name, { Dockerfile: counting });
      await builder.build({ app: thief, appUuid: `uuid-${thief}`, directory, kind: 'dockerfile' }, (line) => lines.push(line)).catch(() => undefined);
      return Math.max(0, ...lines.map((line) => Number(/^started=(\d+)$/.exec(line)?.[1] ?? 0)));
    };

    const counts = await Promise.all([countOf('count-1'), countOf('count-2')]);

    // A limit shared by both builds (ulimit nproc of the one remapped root) would let them start 63 together.
    for (const count of counts) {
      expect(count).toBeLessThanOrEqual(63);
      expect(count).toBeGreaterThanOrEqual(56);
    }
    expect(await cgroups.present()).toEqual([]);
  }, 180_000);

  it('with the cgroup made through the engine (a controller that cannot write the host\'s cgroups), holds the same limit and leaves no cgroup', async () => {
    const throughEngine = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000, pidsLimit: 64, cgroupParent, cgroupMaker: 'engine' });
    const lines: string[] = [];
    const directory = await checkout('count-engine', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nRUN n=0; while [ $n -lt 200 ]; do sleep 60 & n=$((n+1)); echo started=$n; done\n` });
    await throughEngine.build({ app: thief, appUuid: `uuid-${thief}`, directory, kind: 'dockerfile' }, (line) => lines.push(line)).catch(() => undefined);
    const count = Math.max(0, ...lines.map((line) => Number(/^started=(\d+)$/.exec(line)?.[1] ?? 0)));
    expect(count).toBeLessThanOrEqual(63);
    expect(count).toBeGreaterThanOrEqual(56);
    expect(await cgroups.present()).toEqual([]);
  }, 180_000);

  it('a fork bomb in one tenant\'s build, held until its own timeout, leaves another tenant\'s build running at the same time to succeed', async () => {
    const bomber = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 20_000, pidsLimit: 64, cgroupParent });
    const bombing = bomber.build(
      { app: thief, appUuid: `uuid-${thief}`, directory: await checkout('held-bomb', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nRUN bomb() { bomb | bomb & }; bomb; sleep 120\n` }), kind: 'dockerfile' },
      () => undefined,
    );
    // The other tenant starts once the bomb has filled its cgroup.
    await new Promise((done) => setTimeout(done, 5000));
    const lines: string[] = [];
    // 20 processes at once, each a shell and its sleep: well inside the victim's own limit of 64
    // (with 40, up to 80 processes overlapped, and its own fork failed whenever the loop ran fast).
    const other = builder.build(
      {
        app: victim,
        appUuid: `uuid-${victim}`,
        directory: await checkout('beside-bomb', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nRUN for i in $(seq 1 20); do sh -c 'sleep 0.05; echo step-$0' $i & done; wait; echo all-forked\n` }),
        kind: 'dockerfile',
      },
      (line) => lines.push(line),
    );

    expect(await failureOf(bombing)).toMatch(/longer than 20 seconds/);
    const id = await other;
    expect(id).toMatch(/^sha256:/);
    expect(lines).toContain('all-forked');
    await engine().getImage(id).remove({ force: true });
    expect(await cgroups.present()).toEqual([]);
  }, 180_000);

  it('refuses an image past the size limit and removes its layers', async () => {
    const lines: string[] = [];
    const message = await failureOf(
      builder.build(
        { app: thief, appUuid: `uuid-${thief}`, directory: await checkout('huge', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nRUN dd if=/dev/zero of=/big bs=1M count=40\nRUN true\n` }), kind: 'dockerfile' },
        (line) => lines.push(line),
      ),
    );
    expect(message).toMatch(/more than the 16 MiB/);
    // The first layer named is the FROM step's: the base image, which stays.
    const layers = lines.flatMap((line) => /^ ---> ([0-9a-f]{12})$/.exec(line)?.[1] ?? []).slice(1);
    expect(layers.length).toBeGreaterThan(0);
    const left = [];
    for (const layer of layers) if (await imageExists(engine(), layer)) left.push(layer);
    expect({ layers, left }).toEqual({ layers, left: [] });
  }, 180_000);

  it('removes a deleted app\'s images, its intermediate layers included; an app re-created under its name cannot build from them meanwhile', async () => {
    const again = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000 });
    const reborn = async () => again.build({ app: victim, appUuid: 'uuid-of-the-new-app', directory: await checkout('reborn', { Dockerfile: `FROM ${victim}:1\n` }), kind: 'dockerfile' }, () => undefined);
    expect(await failureOf(reborn())).toMatch(/another app/);

    await builder.removeApp(victim, `uuid-${victim}`);

    expect(await engine().listImages({ all: true, filters: JSON.stringify({ label: [`${APP_LABEL}=${victim}`] }) })).toEqual([]);
    expect(await imageExists(engine(), victimLayer)).toBe(false);
  }, 120_000);

  itWithRegistry('pulls a missing base image before the build and refuses its ONBUILD steps when they fetch a URL', async () => {
    const registry = TEST_REGISTRY as string;
    const reference = `${registry}/svc-hostile/onbuild-${suffix}:1`;
    const follow = (stream: NodeJS.ReadableStream) => new Promise<void>((done, fail) => engine().modem.followProgress(stream, (error: Error | null) => (error ? fail(error) : done())));
    // Made outside the platform's builder, as a public image would be.
    const context = pack(await checkout('onbuild-base', { Dockerfile: `FROM ${BUSYBOX_IMAGE}\nONBUILD ADD http://169.254.169.254/latest/meta-data/ /m\n` }));
    await follow(await engine().buildImage(context as never, { t: reference }));
    await follow((await engine().getImage(reference).push({ authconfig: {} } as never)) as unknown as NodeJS.ReadableStream);
    await engine().getImage(reference).remove({ force: true });

    const allowing = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000, registryAllow: [registry] });
    expect(await failureOf(build('onbuild', `FROM ${reference}\n`, thief, allowing))).toMatch(/ONBUILD steps of .*ADD may not fetch/);
    expect(await imageExists(engine(), reference)).toBe(true);
    await engine().getImage(reference).remove({ force: true });
    // Without the allow-list, the loopback registry is never asked.
    expect(await failureOf(build('onbuild-refused', `FROM ${reference}\n`))).toMatch(/refused/);
    expect(await imageExists(engine(), reference)).toBe(false);
  }, 120_000);
});
