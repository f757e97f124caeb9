import { ProcessSourceCompiler, type SandboxStatus } from '../src';

const lendUser = async (): Promise<never> => Promise.reject(new Error('not lent in this test'));

describe('ProcessSourceCompiler.whyBuildsCannotRun', () => {
  it('gives the sentence of a sandbox that cannot be set up: builds run in it, as apps do', async () => {
    const status: SandboxStatus = { mode: 'unavailable', problem: 'apps cannot run: the sandbox is unavailable: bubblewrap (bwrap) is not installed' };
    const compiler = new ProcessSourceCompiler({ scheduler: { lendUser, prepare: async () => status }, dataDir: '/nonexistent' });

    await expect(compiler.whyBuildsCannotRun()).resolves.toBe(status.problem);
  });

  it('answers null with the sandbox on or off, and with a scheduler that cannot say', async () => {
    const on = new ProcessSourceCompiler({ scheduler: { lendUser, prepare: async () => ({ mode: 'on', problem: null }) }, dataDir: '/nonexistent' });
    const off = new ProcessSourceCompiler({ scheduler: { lendUser, prepare: async () => ({ mode: 'off', problem: null }) }, dataDir: '/nonexistent' });
    const silent = new ProcessSourceCompiler({ scheduler: { lendUser }, dataDir: '/nonexistent' });

    expect(await Promise.all([on, off, silent].map((compiler) => compiler.whyBuildsCannotRun()))).toEqual([null, null, null]);
  });
});
