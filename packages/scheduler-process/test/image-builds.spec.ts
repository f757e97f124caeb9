import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BuildToRun } from '@svc/core';
import { CHECKOUT_GONE_REASON, IMAGE_BUILD_REASON, imageBuildNote, processBuildProblem } from '../src/image-builds';

const build = (overrides: Partial<BuildToRun> = {}): BuildToRun => ({
  app: 'myapp',
  release: 4,
  image: 'example/myapp:1',
  workdir: null,
  procfile: { web: 'node server.js' },
  ...overrides,
});

describe('processBuildProblem', () => {
  let checkout: string;

  beforeAll(async () => {
    checkout = await mkdtemp(join(tmpdir(), 'svc-image-builds-'));
  });

  afterAll(async () => {
    await rm(checkout, { recursive: true, force: true });
  });

  it('runs a build with Procfile commands, with or without a checkout that is there', async () => {
    await expect(processBuildProblem(build())).resolves.toBeNull();
    await expect(processBuildProblem(build({ workdir: checkout }))).resolves.toBeNull();
  });

  it.each<[string, Record<string, string>]>([
    ['no Procfile at all', {}],
    ['only a release command', { release: 'migrate' }],
  ])('refuses an image build with %s', async (_what, procfile) => {
    await expect(processBuildProblem(build({ procfile }))).resolves.toBe(IMAGE_BUILD_REASON);
  });

  it("refuses a pushed build whose checkout is no longer on this machine", async () => {
    await expect(processBuildProblem(build({ workdir: join(checkout, 'gone') }))).resolves.toBe(CHECKOUT_GONE_REASON);
  });

  it('says in the log line of an image build which type cannot run', () => {
    expect(imageBuildNote('web.1', 'cmd')).toMatch(/^web\.1 cannot run: the build has no command for the process type cmd \(an image build\)\./);
  });
});
