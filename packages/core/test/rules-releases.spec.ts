import { IMAGE_PROCESS_TYPE, commandFor, describeDeploy, runnableTypes, structureForBuild } from '@svc/core';
import { aBuild } from '@svc/core/testing';

describe('describeDeploy', () => {
  it('names the image of a build without a sha', () => {
    expect(describeDeploy(aBuild({ image: 'example/myapp:v3', sha: '' }))).toBe('deployed example/myapp:v3');
  });

  it('names the first seven characters of the sha when the build has one', () => {
    expect(describeDeploy(aBuild({ image: 'example/myapp:v3', sha: '0123456789abcdef0123456789abcdef01234567' }))).toBe(
      'deployed 0123456',
    );
  });

  it('names a seven-character sha whole', () => {
    expect(describeDeploy(aBuild({ sha: 'abcdef1' }))).toBe('deployed abcdef1');
  });
});

describe('structureForBuild', () => {
  it('starts one web process for a never-scaled app whose Procfile has web', () => {
    expect(structureForBuild({}, { web: 'node server.js', worker: 'node worker.js' })).toEqual({ web: 1 });
  });

  it('starts one cmd process for a never-scaled app whose Procfile has no web', () => {
    expect(structureForBuild({}, { worker: 'node worker.js' })).toEqual({ cmd: 1 });
    expect(structureForBuild({}, {})).toEqual({ cmd: 1 });
  });

  it('keeps the structure of a scaled app, zero counts included', () => {
    expect(structureForBuild({ web: 3, worker: 0 }, { web: 'a', worker: 'b' })).toEqual({ web: 3, worker: 0 });
  });

  it('drops types the new build cannot run, but always keeps cmd', () => {
    expect(structureForBuild({ web: 2, worker: 1, cmd: 1 }, { web: 'a' })).toEqual({ web: 2, cmd: 1 });
  });

  it('starts the default again when the new build can run none of the scaled types', () => {
    expect(structureForBuild({ worker: 2 }, { web: 'node server.js' })).toEqual({ web: 1 });
    expect(structureForBuild({ web: 1 }, {})).toEqual({ cmd: 1 });
  });
});

describe('runnableTypes and commandFor', () => {
  it('a build can run its Procfile types and cmd', () => {
    expect([...runnableTypes({ web: 'a', clock: 'b' })].sort()).toEqual(['clock', 'cmd', 'web']);
    expect([...runnableTypes({})]).toEqual([IMAGE_PROCESS_TYPE]);
  });

  it('a Procfile type runs its command; cmd and unknown types run the image command (null)', () => {
    expect(commandFor({ web: 'node server.js' }, 'web')).toBe('node server.js');
    expect(commandFor({ web: 'node server.js' }, 'cmd')).toBeNull();
  });
});
