import {
  NOTHING_TO_RUN,
  RELEASE_PHASE_FAILED,
  RELEASE_PHASE_TAIL_LINES,
  Unavailable,
  lastLines,
  planSourceBuild,
  releasePhaseCommand,
  releasePhaseFailure,
  runTimedOut,
  runnableTypes,
  structureForBuild,
} from '@svc/core';
import { thrownBy } from './support/world';

const SHA = '0123456789abcdef0123456789abcdef01234567';

describe('the release process type', () => {
  it('is never runnable as containers', () => {
    expect([...runnableTypes({ web: 'a', release: 'b' })].sort()).toEqual(['cmd', 'web']);
  });

  it('is dropped from a structure and never started by default', () => {
    expect(structureForBuild({ release: 1, web: 2 }, { web: 'a', release: 'b' })).toEqual({ web: 2 });
    expect(structureForBuild({}, { release: 'b' })).toEqual({ cmd: 1 });
  });

  it('names the command of the release phase, if any', () => {
    expect(releasePhaseCommand({ web: 'a', release: './migrate' })).toBe('./migrate');
    expect(releasePhaseCommand({ web: 'a' })).toBeNull();
    expect(releasePhaseCommand(Object.create({ release: 'inherited' }) as Record<string, string>)).toBeNull();
  });
});

describe('releasePhaseFailure', () => {
  it('is null for exit code 0', () => {
    expect(releasePhaseFailure(3, { exitCode: 0, output: 'ok' }, 300)).toBeNull();
  });

  it('is a 503 with the exit code and the last 20 lines of output', () => {
    const output = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n');
    const error = releasePhaseFailure(4, { exitCode: 3, output }, 300);

    expect(error).toBeInstanceOf(Unavailable);
    expect(error?.code).toBe(RELEASE_PHASE_FAILED);
    expect(error?.message).toMatch(/^The release phase of v4 exited with code 3; the release was not made/);
    expect(error?.message).toContain('line 11\n');
    expect(error?.message).not.toContain('line 10\n');
    expect(error?.message.endsWith('line 30')).toBe(true);
    expect(RELEASE_PHASE_TAIL_LINES).toBe(20);
  });

  it('says the phase timed out when the scheduler killed it at the timeout', () => {
    const error = releasePhaseFailure(2, { exitCode: 124, output: 'migrating\n[killed after the timeout of 5 s]' }, 5);

    expect(error?.message).toMatch(/^The release phase of v2 timed out after 5 s/);
  });

  it('reports a command that exits 124 by itself as an exit code, not a timeout', () => {
    expect(runTimedOut({ exitCode: 124, output: 'timeout(1) said so' })).toBe(false);
    expect(releasePhaseFailure(2, { exitCode: 124, output: '' }, 5)?.message).toMatch(/exited with code 124; .* It printed nothing\./);
  });

  it('keeps only non-empty lines', () => {
    expect(lastLines('a\r\n\n b \n\n', 5)).toEqual(['a', ' b ']);
  });
});

describe('planSourceBuild with buildpacks', () => {
  it('accepts a commit with neither Procfile nor Dockerfile when it is compiled', () => {
    expect(planSourceBuild('myapp', SHA, { procfile: null, dockerfile: null }, { compiled: true })).toMatchObject({ procfile: {}, dockerfile: '' });
  });

  it('still refuses it with the same message when it is not', () => {
    expect(thrownBy(() => planSourceBuild('myapp', SHA, { procfile: null, dockerfile: null })).message).toBe(NOTHING_TO_RUN);
  });
});
