import type Docker from 'dockerode';
import type { BuildToRun } from '@svc/core';
import { ImagePuller } from '../src/images';
import { PROCESS_BUILD_REASON, engineBuildProblem } from '../src/runnable-builds';

const build = (overrides: Partial<BuildToRun> = {}): BuildToRun => ({
  app: 'myapp',
  release: 5,
  image: 'registry.example/myapp:1',
  workdir: null,
  procfile: { web: 'serve' },
  ...overrides,
});

/** An engine error as dockerode reports one: a status and the engine's message. */
const engineError = (statusCode: number, message: string): Error => Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

/**
 * An engine that has the images of `present` (inspected by name) and answers every pull with
 * `pull`'s error, or succeeds (the image is then present); it records the pulls asked for.
 */
function engine(present: string[], pull: Error | null): { docker: Docker; pulls: string[] } {
  const images = new Set(present);
  const pulls: string[] = [];
  const docker = {
    getImage: (name: string) => ({
      inspect: async () => {
        if (!images.has(name)) throw engineError(404, `No such image: ${name}`);
        return { Id: `sha256:${'0'.repeat(64)}`, RepoTags: [name], RepoDigests: [], Config: { Labels: {} } };
      },
    }),
    pull: async (name: string) => {
      pulls.push(name);
      if (pull !== null) throw pull;
      images.add(name);
      return {};
    },
    modem: { followProgress: (_stream: unknown, done: (error: Error | null) => void) => done(null) },
  } as unknown as Docker;
  return { docker, pulls };
}

const puller = (docker: Docker): ImagePuller => new ImagePuller(docker, 'missing', () => undefined, null, ['registry.example']);

describe('engineBuildProblem', () => {
  it('refuses a build made for the process scheduler without asking the engine', async () => {
    const { docker, pulls } = engine([], null);

    const reason = await engineBuildProblem(puller(docker), build({ image: 'myapp:git-abc1234', workdir: '/data/builds/myapp/abc' }));

    expect(reason).toBe(PROCESS_BUILD_REASON);
    expect(reason).toMatch(/^its build was made for the process scheduler .*only a new git push builds an image of that code/);
    expect(pulls).toEqual([]);
  });

  it('answers null for an image the engine has, without pulling it', async () => {
    const { docker, pulls } = engine(['registry.example/myapp:1'], null);

    await expect(engineBuildProblem(puller(docker), build())).resolves.toBeNull();
    expect(pulls).toEqual([]);
  });

  it('pulls an image the engine lacks, as a start would, and answers null once it is there', async () => {
    const { docker, pulls } = engine([], null);

    await expect(engineBuildProblem(puller(docker), build())).resolves.toBeNull();
    expect(pulls).toEqual(['registry.example/myapp:1']);
  });

  it("names the image and the engine's reason when no registry has it", async () => {
    const { docker } = engine([], engineError(404, 'manifest for registry.example/myapp:1 not found: manifest unknown'));

    await expect(engineBuildProblem(puller(docker), build())).resolves.toBe(
      'image registry.example/myapp:1 cannot be pulled: manifest for registry.example/myapp:1 not found: manifest unknown',
    );
  });

  it('says why a registry on this host is refused', async () => {
    const { docker, pulls } = engine([], null);

    const reason = await engineBuildProblem(puller(docker), build({ image: '127.0.0.1:5000/myapp:1' }));

    expect(reason).toMatch(/^image 127\.0\.0\.1:5000\/myapp:1 cannot be pulled: pulls from 127\.0\.0\.1:5000 are refused/);
    expect(pulls).toEqual([]);
  });

  it('rejects when the registry or the engine fails: that is no reason of the build', async () => {
    const { docker } = engine([], engineError(500, 'Get "https://registry.example/v2/": dial tcp: i/o timeout'));

    await expect(engineBuildProblem(puller(docker), build())).rejects.toThrow(/pulling registry\.example\/myapp:1 failed: .*i\/o timeout/);
  });
});
