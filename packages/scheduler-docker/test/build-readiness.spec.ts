import type Docker from 'dockerode';
import { DockerImageBuilder, DockerSourceCompiler } from '../src';

/** An engine error as dockerode reports one: a status and the engine's message. */
const engineError = (statusCode: number, message: string): Error => Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

/** What the fake engine answers; each field may be changed between two checks. */
interface EngineState {
  /** The error `ping` fails with; null: it answers. */
  down: Error | null;
  /** The error inspecting the build network fails with; null: the network is there, as the controller makes it. */
  network: Error | null;
  /** The images it has. */
  images: Set<string>;
}

function engine(state: EngineState): Docker {
  return {
    modem: { socketPath: '/var/run/docker.sock' },
    ping: async () => {
      if (state.down !== null) throw state.down;
      return 'OK';
    },
    getNetwork: (name: string) => ({
      inspect: async () => {
        if (state.network !== null) throw state.network;
        return { Id: 'f'.repeat(64), Name: name, EnableIPv6: false, Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': 'svc-build0' } };
      },
    }),
    getImage: (name: string) => ({
      inspect: async () => {
        if (!state.images.has(name)) throw engineError(404, `No such image: ${name}`);
        return { Id: `sha256:${'0'.repeat(64)}`, RepoTags: [name], Config: {} };
      },
    }),
  } as unknown as Docker;
}

const STACK = 'localhost/svc-stack:latest';

/** A compiler whose guards the operator installs (no iptables here) and that never makes the stack image. */
const compilerOn = (docker: Docker): DockerSourceCompiler => new DockerSourceCompiler({ docker, stackImage: STACK, guardNetwork: false, makeStackImage: false });

describe('DockerSourceCompiler.whyBuildsCannotRun', () => {
  it('answers null when the engine answers, the build network is there and so is the stack image', async () => {
    const compiler = compilerOn(engine({ down: null, network: null, images: new Set([STACK]) }));

    await expect(compiler.whyBuildsCannotRun()).resolves.toBeNull();
  });

  it('says the engine does not answer, and how to fix it', async () => {
    const compiler = compilerOn(engine({ down: new Error('connect ENOENT /var/run/docker.sock'), network: null, images: new Set([STACK]) }));

    await expect(compiler.whyBuildsCannotRun()).resolves.toBe(
      'buildpack builds cannot run: the Docker engine does not answer (connect ENOENT /var/run/docker.sock): start it, or set DOCKER_HOST to where it runs',
    );
  });

  it('gives the error the build network meets, with where its needs are written, and asks again until the network can be prepared', async () => {
    const state: EngineState = { down: null, network: engineError(500, 'iptables failed: spawn iptables ENOENT'), images: new Set([STACK]) };
    const compiler = compilerOn(engine(state));

    const reason = await compiler.whyBuildsCannotRun();

    expect(reason).toMatch(/^buildpack builds cannot run: the build network svc-build could not be prepared: iptables failed: spawn iptables ENOENT\. Fix that \(docs\/operations\.md/);
    expect(reason).toContain('without a restart');

    state.network = null;
    await expect(compiler.whyBuildsCannotRun()).resolves.toBeNull();
  });

  it('gives the command that makes a stack image it will not make itself', async () => {
    const compiler = compilerOn(engine({ down: null, network: null, images: new Set() }));

    await expect(compiler.whyBuildsCannotRun()).resolves.toMatch(new RegExp(`^the stack image ${STACK} is missing and will not be made: buildpack builds fail until it is made with .*make-stack-image\\.sh ${STACK}$`));
  });
});

describe('DockerImageBuilder.whyBuildsCannotRun', () => {
  it('answers null while the engine answers, and says when it does not', async () => {
    const state: EngineState = { down: null, network: null, images: new Set() };
    const builder = new DockerImageBuilder(engine(state), { stackImage: STACK });

    await expect(builder.whyBuildsCannotRun()).resolves.toBeNull();
    state.down = new Error('connect ECONNREFUSED 10.0.0.5:2375');
    await expect(builder.whyBuildsCannotRun()).resolves.toBe(
      'image builds cannot run: the Docker engine does not answer (connect ECONNREFUSED 10.0.0.5:2375): start it, or set DOCKER_HOST to where it runs',
    );
  });
});
