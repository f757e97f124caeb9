import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, pickScheduler } from '../src';

/** A logger that keeps its lines. */
function recordingLogger(): { logger: pino.Logger; lines: () => Array<{ msg: string; scheduler?: string }> } {
  const chunks: string[] = [];
  const logger = pino({ level: 'info' }, { write: (chunk: string) => void chunks.push(chunk) });
  return { logger, lines: () => chunks.map((c) => JSON.parse(c) as { msg: string; scheduler?: string }) };
}

describe('the scheduler picked when SCHEDULER is unset', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-pick-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is the process scheduler when no engine answers at DOCKER_HOST, and the log says why', async () => {
    const { logger, lines } = recordingLogger();
    const socket = `unix://${join(dir, 'no-engine.sock')}`;

    await expect(pickScheduler(loadConfig({ DOCKER_HOST: socket }), logger)).resolves.toBe('process');

    expect(lines()).toEqual([
      expect.objectContaining({ scheduler: 'process', msg: expect.stringMatching(new RegExp(`^SCHEDULER is unset: using the process scheduler, no Docker engine answers at ${socket} \\(.+\\)$`)) }),
    ]);
  });

  it('is what SCHEDULER says when it is set, without asking the engine', async () => {
    const { logger, lines } = recordingLogger();
    await expect(pickScheduler(loadConfig({ SCHEDULER: 'memory', DOCKER_HOST: `unix://${join(dir, 'x.sock')}` }), logger)).resolves.toBe('memory');
    expect(lines()).toEqual([]);
  });

  const engine = process.env.TEST_DOCKER_HOST?.trim();
  if (engine) {
    it('is the Docker scheduler when an engine answers at DOCKER_HOST', async () => {
      const { logger, lines } = recordingLogger();
      await expect(pickScheduler(loadConfig({ DOCKER_HOST: engine }), logger)).resolves.toBe('docker');
      expect(lines()).toEqual([expect.objectContaining({ scheduler: 'docker', msg: `SCHEDULER is unset: using the Docker scheduler, a Docker engine answers at ${engine}` })]);
    });
  } else if (process.env.CI === 'true') {
    it('is the Docker scheduler when an engine answers (needs TEST_DOCKER_HOST)', () => {
      throw new Error('TEST_DOCKER_HOST is not set under CI=true');
    });
  } else {
    process.stdout.write('The pick of the Docker scheduler was not tested: set TEST_DOCKER_HOST to test it.\n');
  }
});
