import { randomUUID } from 'node:crypto';
import { LABELS, RUN_TIMEOUT_EXIT_CODE, containerName, ImageNotFound } from '../src';
import { BUSYBOX, NODE, TEST_REGISTRY, describeWithEngine, itWithRegistry, testScheduler, type TestScheduler } from './support/engine';
import { get, testSpecs } from './support/specs';

/*
 * The Docker scheduler on a real engine: starting, limits, failures, pulls, restarts, one-off
 * commands, a restarted controller adopting its containers. The isolation of hostile code is in
 * docker-isolation.int.spec.ts.
 */

jest.setTimeout(120_000);

const { spec, runSpec } = testSpecs('dock');

/** Tags a local image with a registry name and pushes it there. */
async function pushToRegistry(t: TestScheduler, local: string, remote: string): Promise<void> {
  const [repo, tag] = [remote.slice(0, remote.lastIndexOf(':')), remote.slice(remote.lastIndexOf(':') + 1)];
  await t.docker.getImage(local).tag({ repo, tag });
  const stream = (await t.docker.getImage(remote).push({ authconfig: {} } as never)) as unknown as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) =>
    t.docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) => {
      const failed = error ?? output.find((o) => o.error);
      if (failed) reject(failed instanceof Error ? failed : new Error(String(failed.error)));
      else resolve();
    }),
  );
}

async function eventually<T>(probe: () => Promise<T | null>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

describeWithEngine('DockerScheduler (real engine)', () => {
  let t: TestScheduler;

  beforeAll(async () => {
    t = await testScheduler();
  });

  afterAll(async () => {
    await t?.cleanUp();
  });

  it('starts a web container from a Procfile command: up, reachable at its endpoint, labelled, with the release environment and its output in the log', async () => {
    const s = spec();
    await expect(t.scheduler.start(s)).resolves.toBe('up');
    const [endpoint] = t.scheduler.endpoints(s.app, 'web');
    expect(endpoint).toBeDefined();
    const answer = await get(endpoint!.host, endpoint!.port, '/passwd');
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('nobody');

    const info = await t.docker.getContainer(containerName(s.id)).inspect();
    expect(info.Config.Labels).toMatchObject({
      [LABELS.app]: s.app,
      [LABELS.type]: 'web',
      [LABELS.num]: '1',
      [LABELS.release]: '1',
      [LABELS.container]: s.id,
      [LABELS.instance]: t.options.instance,
    });
    expect(info.Config.Env).toEqual(expect.arrayContaining([`SVC_APP=${s.app}`, 'SVC_RELEASE=1', 'GREETING=hi there', 'PORT=5000']));
    expect(info.Config.User).toBe('65534:65534');
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(info.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(info.HostConfig.PidsLimit).toBe(64);
    expect(info.HostConfig.Binds ?? []).toEqual([]);
    expect(info.Mounts).toEqual([]);
    await t.waitForLine(s.app, new RegExp(`^${s.app}\\[web\\.1\\]: hello from ${s.app}$`));
    await expect(t.scheduler.states([s.id, 'unknown'])).resolves.toEqual(new Map([[s.id, 'up']]));

    await t.scheduler.stop(s.id);
    await expect(t.docker.getContainer(containerName(s.id)).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(t.scheduler.states([s.id])).resolves.toEqual(new Map());
    expect(t.scheduler.endpoints(s.app, 'web')).toEqual([]);
  });

  it('sets the memory limit as a hard limit (no swap beyond it) and the CPU value as a real CPU limit, 1024 shares being one CPU', async () => {
    const s = spec({ type: 'worker', command: 'exec sleep 600', memory: '64M', cpu: 512 });
    await expect(t.scheduler.start(s)).resolves.toBe('up');
    const info = await t.docker.getContainer(containerName(s.id)).inspect();
    expect(info.HostConfig.Memory).toBe(64 * 1024 * 1024);
    expect(info.HostConfig.MemorySwap).toBe(64 * 1024 * 1024);
    expect(info.HostConfig.NanoCpus).toBe(500_000_000);
    await t.scheduler.stop(s.id);
  });

  it("runs an image's own CMD when the build has no Procfile command (type cmd), routed like web: up once it listens", async () => {
    const base = await t.docker.createContainer({ Image: BUSYBOX, Cmd: ['true'] });
    const image = `svc-test/cmd-${process.pid}:1`;
    await base.commit({ repo: image.split(':')[0], tag: '1', changes: 'CMD ["/bin/sh", "-c", "echo own command as $(id -u); sleep 2; exec httpd -f -p $PORT"]' } as never);
    await base.remove({ force: true });
    try {
      const s = spec({ type: 'cmd', image, command: null });
      await expect(t.scheduler.start(s)).resolves.toBe('up');
      await t.waitForLine(s.app, new RegExp(`^${s.app}\\[cmd\\.1\\]: own command as 65534$`));
      await t.scheduler.stop(s.id);
    } finally {
      await t.docker.getImage(image).remove({ force: true }).catch(() => undefined);
    }
  });

  it('fails a start whose web process never listens, with the reason and last output, and leaves nothing behind', async () => {
    const s = spec({ command: 'echo about to fail; exit 3' });
    await expect(t.scheduler.start(s)).rejects.toThrow(/exited with code 3 before it was up; last output: about to fail/);
    await expect(t.docker.getContainer(containerName(s.id)).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(t.scheduler.states([s.id])).resolves.toEqual(new Map());
  });

  it('fails a start with the last 20 lines of the failing process, one per line, escaped', async () => {
    const s = spec({ command: 'i=1; while [ $i -le 30 ]; do echo "trace line $i"; i=$((i+1)); done; printf "bell \\007 end\\n"; exit 4' });
    const failure = (await t.scheduler.start(s).catch((error: unknown) => error)) as Error;
    const lines = Array.from({ length: 19 }, (_, i) => `trace line ${i + 12}`);
    expect(failure.message).toBe(`it exited with code 4 before it was up; last output: ${[...lines, 'bell \\x07 end'].join('\n')}`);
  });

  it('fails a start of an image no registry has, with the engine reason, as the request fault, and keeps nothing', async () => {
    const registry = TEST_REGISTRY ?? '127.0.0.1:1';
    const s = spec({ image: `${registry}/svc-test/missing:${process.pid}` });
    const failure = await t.scheduler.start(s).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/pulling .*missing.* failed: /);
    if (TEST_REGISTRY !== null) expect(failure).toBeInstanceOf(ImageNotFound);
    await expect(t.docker.getContainer(containerName(s.id)).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  itWithRegistry('pulls an image by name from a registry, shares one pull among the containers of a release, and writes the progress to the log', async () => {
    const registry = TEST_REGISTRY as string;
    const image = `${registry}/svc-test/pulled-${process.pid}:1`;
    await pushToRegistry(t, BUSYBOX, image);
    await t.docker.getImage(image).remove({ force: true });
    const first = spec({ image });
    const second = spec({ app: first.app, image, num: 2 });
    await expect(Promise.all([t.scheduler.start(first), t.scheduler.start(second)])).resolves.toEqual(['up', 'up']);
    const lines = await t.lines(first.app);
    expect(lines.filter((l) => l.includes(`pulling image ${image}`))).toHaveLength(1);
    expect(lines.some((l) => /pull .*: (Pull complete|Download complete|Status: Downloaded newer image)/.test(l))).toBe(true);
    await t.scheduler.stop(first.id);
    await t.scheduler.stop(second.id);
    await t.docker.getImage(image).remove({ force: true }).catch(() => undefined);
  });

  it('stopping an unknown id is fine', async () => {
    await expect(t.scheduler.stop(randomUUID())).resolves.toBeUndefined();
  });

  it('restarts a crashed container after the back-off and says why in the log', async () => {
    const s = spec({ type: 'worker', command: 'echo started; sleep 2; echo bye; exit 7' });
    await expect(t.scheduler.start(s)).resolves.toBe('up');
    await t.waitForLine(s.app, /worker\.1 \(v1\) crashed: it exited with code 7; last output: bye; starting it again/);
    await eventually(async () => ((await t.lines(s.app)).filter((l) => l.endsWith(': started')).length >= 2 ? true : null), 'it started again');
    await t.scheduler.stop(s.id);
  });

  it('kills a container over its memory limit: crashed, with the reason in the log', async () => {
    const s = spec({
      type: 'worker',
      image: NODE,
      command: 'node -e "setTimeout(() => { const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1)); }, 1500)"',
      memory: '48M',
    });
    await expect(t.scheduler.start(s)).resolves.toBe('up');
    await t.waitForLine(s.app, /worker\.1 \(v1\) crashed: it was killed for exceeding its memory limit of 48M \(out of memory\)/);
    await t.scheduler.stop(s.id);
  });

  it('gives containers whose app sets no limits, and one-off commands, the default limits (1G, one CPU)', async () => {
    const s = spec({ type: 'worker', command: 'exec sleep 600' });
    await t.scheduler.start(s);
    const info = await t.docker.getContainer(containerName(s.id)).inspect();
    expect(info.HostConfig.Memory).toBe(1024 ** 3);
    expect(info.HostConfig.MemorySwap).toBe(1024 ** 3);
    expect(info.HostConfig.NanoCpus).toBe(1e9);
    await t.scheduler.stop(s.id);
  });

  it('kills a one-off command over the default memory limit (exit 137), and the host carries on', async () => {
    const small = await testScheduler({ defaultMemory: '48M' });
    try {
      const result = await small.scheduler.run(
        runSpec('node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))"; echo "exit $?"', { image: NODE, timeoutSeconds: 60 }),
      );
      expect(result.output).toMatch(/exit 137/);
    } finally {
      await small.cleanUp();
    }
  });

  describe('run', () => {
    it('runs a one-off command in a container of the image: exit code, output, environment, and the container removed', async () => {
      const r = runSpec('echo "out $SVC_APP $PORT"; echo err >&2; exit 5');
      const result = await t.scheduler.run(r);
      expect(result.exitCode).toBe(5);
      expect(result.output).toContain(`out ${r.app} 5000`);
      expect(result.output).toContain('err');
      const left = await t.docker.listContainers({ all: true, filters: { label: [`${LABELS.app}=${r.app}`] } });
      expect(left).toEqual([]);
    });

    it('kills a command at its timeout and reports 124', async () => {
      const result = await t.scheduler.run(runSpec('echo started; sleep 60', { timeoutSeconds: 2 }));
      expect(result.exitCode).toBe(RUN_TIMEOUT_EXIT_CODE);
      expect(result.output).toContain('started');
      expect(result.output).toContain('killed after the timeout of 2 s');
    });

    it('caps the output', async () => {
      const result = await t.scheduler.run(runSpec('yes 0123456789 | head -c 200000', { outputLimitBytes: 1000 }));
      expect(result.exitCode).toBe(0);
      expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(1000);
      expect(result.output).toContain('[output truncated at 1000 bytes]');
    });
  });

  describe('controller restart', () => {
    it('adopts the running containers of the same spec (same engine container, not restarted) and reaps those no longer recorded', async () => {
      const kept = spec();
      const dropped = spec({ app: kept.app, num: 2 });
      await t.scheduler.start(kept);
      await t.scheduler.start(dropped);
      const before = await t.docker.getContainer(containerName(kept.id)).inspect();
      await t.scheduler.shutdown();
      // The containers outlive the controller process.
      expect((await t.docker.getContainer(containerName(kept.id)).inspect()).State.Running).toBe(true);

      const next = t.again();
      await expect(next.start(kept)).resolves.toBe('up');
      const after = await t.docker.getContainer(containerName(kept.id)).inspect();
      expect(after.Id).toBe(before.Id);
      expect(after.State.StartedAt).toBe(before.State.StartedAt);
      await t.waitForLine(kept.app, /web\.1 \(v1\) adopted/);
      const [endpoint] = next.endpoints(kept.app, 'web');
      expect((await get(endpoint!.host, endpoint!.port, '/passwd')).status).toBe(200);

      await expect(next.reapOrphans()).resolves.toBe(1);
      await expect(t.docker.getContainer(containerName(dropped.id)).inspect()).rejects.toMatchObject({ statusCode: 404 });
      await next.stop(kept.id);
      t.scheduler = next;
    });

    it('adopts from one survey of the engine: the same containers, and one that died after the survey is started afresh', async () => {
      const kept = spec();
      const died = spec({ app: kept.app, num: 2 });
      await t.scheduler.start(kept);
      await t.scheduler.start(died);
      const before = await t.docker.getContainer(containerName(kept.id)).inspect();
      const gone = await t.docker.getContainer(containerName(died.id)).inspect();
      await t.scheduler.shutdown();

      const next = t.again();
      await expect(next.survey()).resolves.toBeGreaterThanOrEqual(2);
      // After the survey, behind the scheduler's back: its list is out of date for this one.
      await t.docker.getContainer(gone.Id).remove({ force: true });
      const [keptState, diedState] = await Promise.all([next.start(kept), next.start(died)]);
      expect([keptState, diedState]).toEqual(['up', 'up']);
      const after = await t.docker.getContainer(containerName(kept.id)).inspect();
      expect(after.Id).toBe(before.Id);
      expect(after.State.StartedAt).toBe(before.State.StartedAt);
      const replaced = await t.docker.getContainer(containerName(died.id)).inspect();
      expect(replaced.Id).not.toBe(gone.Id);
      expect(replaced.State.Running).toBe(true);
      for (const endpoint of next.endpoints(kept.app, 'web')) expect((await get(endpoint.host, endpoint.port, '/passwd')).status).toBe(200);
      await expect(next.reapOrphans()).resolves.toBe(0);
      await next.stop(kept.id);
      await next.stop(died.id);
      t.scheduler = next;
    });

    it('replaces a leftover container of a different spec instead of adopting it', async () => {
      const first = spec();
      await t.scheduler.start(first);
      const before = await t.docker.getContainer(containerName(first.id)).inspect();
      await t.scheduler.shutdown();
      const next = t.again();
      await expect(next.start({ ...first, env: { ...first.env, GREETING: 'changed' } })).resolves.toBe('up');
      const after = await t.docker.getContainer(containerName(first.id)).inspect();
      expect(after.Id).not.toBe(before.Id);
      await next.stop(first.id);
      t.scheduler = next;
    });
  });
});
