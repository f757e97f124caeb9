import { createServer, type Server } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerImageBuilder, containerName, ImageNotFound } from '../src';
import { BUSYBOX, describeWithEngine, testScheduler, type TestScheduler } from './support/engine';
import { get, testSpecs } from './support/specs';

/*
 * The Docker scheduler on a real engine against hostile code: another app's images, users and
 * capabilities, the host's services and other containers out of reach, the pids limit. Its apps,
 * instance label and network are its own (docker-scheduler.int.spec.ts has the rest).
 */

jest.setTimeout(120_000);

const { newApp, spec, runSpec } = testSpecs('dockiso');

describeWithEngine('DockerScheduler (real engine)', () => {
  let t: TestScheduler;

  beforeAll(async () => {
    t = await testScheduler();
  });

  afterAll(async () => {
    await t?.cleanUp();
  });

  describe('isolation (hostile code)', () => {
    let hostService: Server;
    let hostPort = 0;

    beforeAll(async () => {
      // A service of the host bound to every address, as a carelessly configured database would be.
      hostService = createServer((socket) => socket.end('host secret\n'));
      await new Promise<void>((done) => hostService.listen(0, '0.0.0.0', done));
      hostPort = (hostService.address() as { port: number }).port;
    });

    afterAll(async () => {
      await new Promise<void>((done) => hostService.close(() => done()));
    });

    it("cannot run another app's build: its guessable name <app>:<version> is refused, for containers and one-off commands, and nothing starts", async () => {
      const owner = newApp();
      const checkout = await mkdtemp(join(tmpdir(), 'svc-owned-image-'));
      const builder = new DockerImageBuilder(t.docker, { stackImage: BUSYBOX, timeoutMs: 120_000 });
      try {
        await writeFile(join(checkout, 'Procfile'), 'web: httpd -f -p $PORT -h /app\n');
        await writeFile(join(checkout, 'secret.txt'), "the owner's code\n");
        const id = await builder.build({ app: owner, appUuid: `uuid-${owner}`, directory: checkout, kind: 'procfile' }, () => undefined);
        await builder.tag(id, `${owner}:2`);

        // Another tenant names the owner's build in an image deploy, then in a one-off command.
        const stolen = spec({ image: `${owner}:2`, command: 'cat /app/secret.txt; exec httpd -f -p "$PORT"' });
        const failure = await t.scheduler.start(stolen).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(ImageNotFound);
        expect((failure as Error).message).toBe(`the image ${owner}:2 was built for another app: an app runs its own builds, or images from a registry`);
        await expect(t.docker.getContainer(containerName(stolen.id)).inspect()).rejects.toMatchObject({ statusCode: 404 });
        await expect(t.scheduler.run(runSpec('cat /app/secret.txt', { image: id }))).rejects.toBeInstanceOf(ImageNotFound);
        expect((await t.lines(stolen.app)).join('\n')).not.toContain("the owner's code");

        // Its own app runs it.
        const own = spec({ app: owner, image: `${owner}:2`, command: 'exec httpd -f -p "$PORT" -h /app' });
        await expect(t.scheduler.start(own)).resolves.toBe('up');
        await t.scheduler.stop(own.id);
      } finally {
        await t.docker.getImage(`${owner}:2`).remove({ force: true }).catch(() => undefined);
        await rm(checkout, { recursive: true, force: true });
      }
    });

    it('runs a platform-built image as the user that owns its /app, so the app writes its own files and /tmp; a given image as DOCKER_USER', async () => {
      const owner = newApp();
      const checkout = await mkdtemp(join(tmpdir(), 'svc-own-user-'));
      const builder = new DockerImageBuilder(t.docker, { stackImage: BUSYBOX, timeoutMs: 120_000 });
      try {
        await writeFile(join(checkout, 'Procfile'), 'web: httpd -f -p $PORT -h /app\n');
        await writeFile(join(checkout, 'data.txt'), 'committed\n');
        const id = await builder.build({ app: owner, appUuid: `uuid-${owner}`, directory: checkout, kind: 'procfile' }, () => undefined);
        await builder.tag(id, `${owner}:1`);
        const script = 'id -u; echo written > /app/new.txt && echo more >> /app/data.txt && cat /app/new.txt /app/data.txt; echo tmp > /tmp/t && cat /tmp/t';
        const result = await t.scheduler.run(runSpec(script, { app: owner, image: `${owner}:1` }));
        expect(result).toMatchObject({ exitCode: 0, output: '10000\nwritten\ncommitted\nmore\ntmp\n' });
        const given = await t.scheduler.run(runSpec('id -u; touch /app-not-mine 2>/dev/null || echo refused'));
        expect(given.output).toBe('65534\nrefused\n');
      } finally {
        await t.docker.getImage(`${owner}:1`).remove({ force: true }).catch(() => undefined);
        await rm(checkout, { recursive: true, force: true });
      }
    });

    it('bounds the engine\'s log of every container it makes (json-file, 10m x 3 by default)', async () => {
      const s = spec();
      await t.scheduler.start(s);
      const info = await t.docker.getContainer(containerName(s.id)).inspect();
      expect(info.HostConfig.LogConfig).toEqual({ Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } });
      await t.scheduler.stop(s.id);
    });

    it('runs as a non-root user without capabilities', async () => {
      const result = await t.scheduler.run(runSpec('id -u; grep -E "^Cap(Eff|Prm|Bnd)" /proc/self/status; grep NoNewPrivs /proc/self/status'));
      expect(result.exitCode).toBe(0);
      expect(result.output).toMatch(/^65534$/m);
      expect(result.output).toMatch(/CapEff:\s+0000000000000000/);
      expect(result.output).toMatch(/CapBnd:\s+0000000000000000/);
      expect(result.output).toMatch(/NoNewPrivs:\s+1/);
    });

    it("cannot see the controller's data, the engine socket or another container's processes and environment", async () => {
      const other = spec({ type: 'worker', command: 'exec sleep 600', env: { SVC_APP: 'x', SVC_RELEASE: '1', OTHER_SECRET: 'do-not-leak' } });
      await t.scheduler.start(other);
      const result = await t.scheduler.run(
        runSpec(
          `ls /work /var/lib /run/docker.sock /var/run/docker.sock ${process.cwd()} 2>&1; ` +
            'cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c OTHER_SECRET; ps -o pid,args',
        ),
      );
      expect(result.output).not.toContain('do-not-leak');
      expect(result.output).toMatch(/No such file or directory/);
      expect(result.output).not.toContain('sleep 600');
      expect(result.output).toMatch(/^0$/m);
      await t.scheduler.stop(other.id);
    });

    it("cannot reach the host's services: loopback, the network gateway, the machine's own address", async () => {
      const gateway = (await t.docker.getNetwork(t.options.network ?? '').inspect()) as { IPAM: { Config: { Gateway?: string }[] } };
      const gatewayAddress = gateway.IPAM.Config[0]?.Gateway ?? '';
      expect(gatewayAddress).not.toBe('');
      const result = await t.scheduler.run(
        runSpec(
          `for target in 127.0.0.1:5432 127.0.0.1:${hostPort} ${gatewayAddress}:${hostPort} ${gatewayAddress}:5432; do ` +
            'if nc -w 2 ${target%:*} ${target#*:} </dev/null >/tmp/out 2>&1; then echo "REACHED $target $(cat /tmp/out)"; else echo "blocked $target"; fi; done',
          { timeoutSeconds: 60 },
        ),
      );
      expect(result.output).not.toContain('REACHED');
      expect(result.output).not.toContain('host secret');
      expect(result.output.match(/blocked/g)?.length).toBe(4);
    });

    it("cannot reach another app's container directly", async () => {
      const target = spec();
      await t.scheduler.start(target);
      const [endpoint] = t.scheduler.endpoints(target.app, 'web');
      // The host (the router) reaches it...
      expect((await get(endpoint!.host, endpoint!.port, '/passwd')).status).toBe(200);
      // ...another app's container does not.
      const result = await t.scheduler.run(runSpec(`wget -q -T 3 -O - http://${endpoint!.host}:${endpoint!.port}/passwd && echo REACHED || echo blocked`, { timeoutSeconds: 30 }));
      expect(result.output).toContain('blocked');
      expect(result.output).not.toContain('REACHED');
      await t.scheduler.stop(target.id);
    });

    it('a hostile Procfile command is held the same way: non-root, no host services, no other containers, no engine socket', async () => {
      const victim = spec({ type: 'worker', command: 'exec sleep 600', env: { SVC_APP: 'victim', SVC_RELEASE: '1', VICTIM_SECRET: 'do-not-leak' } });
      await t.scheduler.start(victim);
      const gateway = ((await t.docker.getNetwork(t.options.network ?? '').inspect()) as { IPAM: { Config: { Gateway?: string }[] } }).IPAM.Config[0]?.Gateway ?? '';
      const hostile = spec({
        type: 'worker',
        command:
          'echo "uid $(id -u)"; ' +
          `nc -w 2 ${gateway} ${hostPort} </dev/null >/dev/null 2>&1 && echo "REACHED host" || echo "blocked host"; ` +
          'nc -w 2 127.0.0.1 5432 </dev/null >/dev/null 2>&1 && echo "REACHED pg" || echo "blocked pg"; ' +
          'echo "secrets $(cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c VICTIM_SECRET)"; ' +
          'test -e /var/run/docker.sock && echo "REACHED socket" || echo "no socket"; ' +
          'echo checks done; exec sleep 600',
      });
      await t.scheduler.start(hostile);
      await t.waitForLine(hostile.app, /worker\.1\]: checks done$/);
      const lines = (await t.lines(hostile.app)).filter((l) => l.startsWith(`${hostile.app}[worker.1]: `)).map((l) => l.slice(`${hostile.app}[worker.1]: `.length));
      expect(lines).toEqual(['uid 65534', 'blocked host', 'blocked pg', 'secrets 0', 'no socket', 'checks done']);
      await t.scheduler.stop(hostile.id);
      await t.scheduler.stop(victim.id);
    });

    it('cannot kill processes outside its container, and a fork bomb stops at the pids limit', async () => {
      const victim = spec({ type: 'worker', command: 'exec sleep 600' });
      await t.scheduler.start(victim);
      const result = await t.scheduler.run(
        runSpec('kill -9 -1 2>&1; pkill -9 sleep 2>&1; f() { f | f & }; f; sleep 3; echo survived', { timeoutSeconds: 20 }),
      );
      // Only its own processes were there to kill, and forks failed at the limit.
      expect(result.output).toMatch(/can't fork|Resource temporarily unavailable/);
      const info = await t.docker.getContainer(containerName(victim.id)).inspect();
      expect(info.State.Running).toBe(true);
      await expect(t.scheduler.states([victim.id])).resolves.toEqual(new Map([[victim.id, 'up']]));
      // The engine and the host still serve: a fresh command runs.
      await expect(t.scheduler.run(runSpec('echo fine'))).resolves.toMatchObject({ exitCode: 0, output: 'fine\n' });
      await t.scheduler.stop(victim.id);
    });
  });
});
