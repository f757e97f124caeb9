import {
  BUILD_FAILED,
  buildFailed,
  isDigestReference,
  isReleaseImage,
  releaseImage,
  NOTHING_TO_RUN,
  PROCFILE_MAX_LENGTH,
  RequestRejected,
  ValidationFailed,
  collectRetainedBuilds,
  parseProcfile,
  planSourceBuild,
  sourceImage,
} from '@svc/core';
import { thrownBy } from './support/world';

const SHA = '0123456789abcdef0123456789abcdef01234567';

describe('parseProcfile', () => {
  it('reads one process type per line, trimming around the colon and the command', () => {
    expect(parseProcfile('web: node server.js --port $PORT\nworker:node worker.js\n  clock :  ./clock  \n')).toEqual({
      web: 'node server.js --port $PORT',
      worker: 'node worker.js',
      clock: './clock',
    });
  });

  it('ignores blank lines, comments, CRLF line ends and a byte-order mark', () => {
    expect(parseProcfile('\uFEFF# processes\r\n\r\nweb: npm start\r\n   # worker: off\r\n')).toEqual({ web: 'npm start' });
  });

  it('keeps colons inside the command', () => {
    expect(parseProcfile('web: env A=b:c node -e "x: 1"')).toEqual({ web: 'env A=b:c node -e "x: 1"' });
  });

  it('reports every wrong line at once, with its number', () => {
    const error = thrownBy(() => parseProcfile('web node server.js\nWeb: x\nworker:\nweb: a\nweb: b\n'));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields?.procfile).toEqual([
      'Procfile line 1: expected "<process type>: <command>", e.g. "web: node server.js".',
      'Procfile line 2: process types can only contain [a-z0-9-_] and must start and end with a letter or digit, got "Web".',
      'Procfile line 3: the process type worker has no command.',
      'Procfile line 5: the process type web is declared twice.',
    ]);
  });

  it('refuses a Procfile that declares nothing', () => {
    expect(thrownBy(() => parseProcfile('# nothing yet\n')).fields).toEqual({ procfile: ['The Procfile declares no process type.'] });
  });

  it('refuses a Procfile larger than the limit', () => {
    expect(thrownBy(() => parseProcfile(`web: ${'x'.repeat(PROCFILE_MAX_LENGTH)}`)).fields?.procfile?.[0]).toMatch(/larger than/);
  });

  it('gives a plain object whose keys are only the declared types', () => {
    const procfile = parseProcfile('web: a');

    expect(Object.getPrototypeOf(procfile)).toBe(Object.prototype);
    expect(Object.keys(procfile)).toEqual(['web']);
  });
});

describe('sourceImage', () => {
  it('names the image after the app and the short sha', () => {
    expect(sourceImage('myapp', SHA)).toBe('myapp:git-0123456');
  });
});

describe('planSourceBuild', () => {
  it('plans a Procfile build with the source image', () => {
    expect(planSourceBuild('myapp', SHA, { procfile: 'web: node server.js', dockerfile: null })).toEqual({
      image: 'myapp:git-0123456',
      sha: SHA,
      procfile: { web: 'node server.js' },
      dockerfile: '',
    });
  });

  it('plans a Dockerfile-only build with an empty Procfile', () => {
    expect(planSourceBuild('myapp', SHA, { procfile: null, dockerfile: 'FROM node:20\n' })).toMatchObject({ procfile: {}, dockerfile: 'FROM node:20\n' });
  });

  it('refuses a commit with neither a Procfile nor a Dockerfile, explaining what to add', () => {
    const error = thrownBy(() => planSourceBuild('myapp', SHA, { procfile: null, dockerfile: null }));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe('BUILD.NOTHING_TO_RUN');
    expect(error.message).toBe(NOTHING_TO_RUN);
    expect(error.message).toMatch(/web: node server\.js/);
  });

  it.each(['abc1234', SHA.toUpperCase(), `${SHA}0`])('refuses the commit id %p', (sha) => {
    expect(thrownBy(() => planSourceBuild('myapp', sha, { procfile: 'web: a', dockerfile: null })).fields).toHaveProperty('sha');
  });
});

describe('collectRetainedBuilds', () => {
  const releases = (...builds: Array<string | null>) => builds.map((build) => ({ build }));

  it('keeps the newest distinct builds, skipping releases without one', () => {
    const kept = new Set<string>();

    const full = collectRetainedBuilds(kept, releases('c', null, 'c', 'b', 'a'), 2);

    expect(full).toBe(true);
    expect([...kept]).toEqual(['c', 'b']);
  });

  it('continues an earlier call and says when it is not full yet', () => {
    const kept = new Set<string>(['c']);

    expect(collectRetainedBuilds(kept, releases('c', null), 3)).toBe(false);
    expect(collectRetainedBuilds(kept, releases('b', 'a', 'z'), 3)).toBe(true);
    expect([...kept]).toEqual(['c', 'b', 'a']);
  });
});

describe('releaseImage and isReleaseImage', () => {
  it('names a release\'s image <app>:<version> and recognises only such names of the same app', () => {
    expect(releaseImage('my-app', 12)).toBe('my-app:12');
    expect(isReleaseImage('my-app', 'my-app:12')).toBe(true);
    expect(isReleaseImage('my-app', 'my-app:git-1234567')).toBe(false);
    expect(isReleaseImage('my-app', 'my-app:012')).toBe(false);
    expect(isReleaseImage('my', 'my-app:12')).toBe(false);
    expect(isReleaseImage('my-app', 'registry/my-app:12')).toBe(false);
  });
});

describe('buildFailed', () => {
  it('is a rejection with the BUILD.FAILED code and the reason', () => {
    const error = buildFailed('unknown instruction: FORM');

    expect(error.code).toBe(BUILD_FAILED);
    expect(error.kind).toBe('invalid');
    expect(error.message).toBe('The image build failed: unknown instruction: FORM');
  });
});

describe('isDigestReference', () => {
  it('knows a reference by digest, as a builder that pushes answers, from names and ids', () => {
    const hex = 'a'.repeat(64);
    expect(isDigestReference(`10.0.0.1:5000/my-app@sha256:${hex}`)).toBe(true);
    expect(isDigestReference(`registry.example.com/team/my-app@sha256:${hex}`)).toBe(true);
    expect(isDigestReference(`sha256:${hex}`)).toBe(false);
    expect(isDigestReference('my-app:3')).toBe(false);
    expect(isDigestReference(`my-app@sha256:${'a'.repeat(63)}`)).toBe(false);
    expect(isDigestReference(`my app@sha256:${hex}`)).toBe(false);
  });
});
