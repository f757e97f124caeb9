import { createServer, type Server } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkPorts,
  checkSchedulerRecord,
  portSettings,
  PreflightError,
  readinessDetails,
  samePortProblem,
  schedulerChange,
  type PortsConfig,
} from '../src/preflight';

const PORTS: PortsConfig = { port: 0, host: '127.0.0.1', routerPort: 0, routerTlsPort: null, routerHost: '127.0.0.1', gitSshPort: 0, gitSshHost: '127.0.0.1' };

function listening(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

function logger(): { lines: string[]; info: (obj: object, msg: string) => void; warn: (obj: object, msg: string) => void } {
  const lines: string[] = [];
  return { lines, info: (_obj, msg) => void lines.push(`info ${msg}`), warn: (_obj, msg) => void lines.push(`warn ${msg}`) };
}

describe('the ports checked at start-up', () => {
  it('are the fixed ports of the settings, without 0 (any free port) and without those turned off', () => {
    expect(portSettings({ ...PORTS, port: 8000, routerPort: 8080, gitSshPort: null }).map((p) => [p.setting, p.port])).toEqual([
      ['PORT', 8000],
      ['ROUTER_PORT', 8080],
    ]);
    expect(portSettings({ ...PORTS, routerTlsPort: 8443, gitSshPort: 2222 }).map((p) => p.setting)).toEqual(['ROUTER_TLS_PORT', 'GIT_SSH_PORT']);
  });

  it('refuse two settings with the same port, naming both', () => {
    const problem = samePortProblem(portSettings({ ...PORTS, port: 8000, gitSshPort: 8000 }));
    expect(problem?.message).toBe('PORT and GIT_SSH_PORT are both 8000: give GIT_SSH_PORT another port');
    expect(problem?.setting).toBe('GIT_SSH_PORT');
    expect(samePortProblem(portSettings({ ...PORTS, port: 8000, gitSshPort: 2222 }))).toBeNull();
  });

  it('name the setting of a port another program holds, and how to fix it', async () => {
    const { server, port } = await listening();
    try {
      const failure = await checkPorts({ ...PORTS, gitSshPort: port }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PreflightError);
      expect((failure as PreflightError).setting).toBe('GIT_SSH_PORT');
      expect((failure as Error).message).toBe(
        `GIT_SSH_PORT: port ${port} on 127.0.0.1 is already in use (another controller or program listens there): stop what holds it or set GIT_SSH_PORT to a free port, or set GIT_SSH_PORT=off`,
      );
      await expect(checkPorts({ ...PORTS, port })).rejects.toThrow(/^PORT: port \d+ on 127\.0\.0\.1 is already in use .*set PORT to a free port$/);
      await expect(checkPorts({ ...PORTS, routerTlsPort: port })).rejects.toThrow(/or leave ROUTER_TLS_PORT unset$/);
    } finally {
      server.close();
    }
  });

  it('pass when every port is free, and leave them free', async () => {
    const { server, port } = await listening();
    await new Promise((resolve) => server.close(resolve));
    await expect(checkPorts({ ...PORTS, port })).resolves.toBeUndefined();
    const again = createServer();
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.listen(port, '127.0.0.1', () => resolve());
    });
    again.close();
  });
});

describe('the scheduler recorded in the data directory', () => {
  it('is kept when it is the same, and recorded when there is none', () => {
    expect(schedulerChange('process', 'process', ['a'], false)).toEqual({ action: 'keep' });
    expect(schedulerChange(null, 'docker', [], false)).toEqual({ action: 'record', message: null });
    expect(schedulerChange('docker', 'memory', ['a'], false)).toEqual({ action: 'keep' });
  });

  it('changes freely when no app has containers', () => {
    expect(schedulerChange('process', 'docker', [], false)).toEqual({ action: 'record', message: expect.stringContaining('no app has containers') });
  });

  it('refuses a change that would leave apps down, naming them, the setting and both ways out', () => {
    const change = schedulerChange('process', 'docker', ['api', 'web'], false);
    expect(change.action).toBe('refuse');
    const { error } = change as { error: PreflightError };
    expect(error.setting).toBe('SCHEDULER');
    expect(error.message).toBe(
      'this data directory was last run with SCHEDULER=process, and this start would use docker: apps api, web would not run. ' +
        'Set SCHEDULER=process to keep running them as before, or set SCHEDULER_ADOPT=1 (once) to adopt them with docker, then rebuild each from its working copy with git commit --allow-empty -m rebuild && git push svc main: a build made for process does not run on docker',
    );
  });

  it('adopts them with SCHEDULER_ADOPT', () => {
    expect(schedulerChange('docker', 'swarm', ['api'], true)).toEqual({ action: 'adopt', message: 'SCHEDULER_ADOPT=1: the apps the docker scheduler ran (api) are started with swarm' });
  });

  it('adopting builds made for another kind of scheduler, gives the command that rebuilds them (a push of the same commit changes nothing)', () => {
    expect(schedulerChange('process', 'docker', ['api'], true)).toEqual({
      action: 'adopt',
      message:
        'SCHEDULER_ADOPT=1: the apps the process scheduler ran (api) are started with docker, then rebuild each from its working copy with ' +
        'git commit --allow-empty -m rebuild && git push svc main: a build made for process does not run on docker',
    });
  });

  describe('in a data directory', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'svc-preflight-'));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('is written on the first start, then a change with apps is refused and the record stays', async () => {
      const log = logger();
      await checkSchedulerRecord(dir, 'process', async () => ['myapp'], false, log);
      expect(await readFile(join(dir, 'scheduler'), 'utf8')).toBe('process\n');

      await expect(checkSchedulerRecord(dir, 'docker', async () => ['myapp'], false, log)).rejects.toThrow(/apps? myapp would not run/);
      expect(await readFile(join(dir, 'scheduler'), 'utf8')).toBe('process\n');
      expect(log.lines).toEqual([]);
    });

    it('is replaced when the apps are adopted, with a warning', async () => {
      await writeFile(join(dir, 'scheduler'), 'process\n');
      const log = logger();
      await checkSchedulerRecord(dir, 'docker', async () => ['myapp'], true, log);
      expect(await readFile(join(dir, 'scheduler'), 'utf8')).toBe('docker\n');
      expect(log.lines).toEqual([expect.stringMatching(/^warn SCHEDULER_ADOPT=1: the apps the process scheduler ran \(myapp\)/)]);
    });

    it('is not read for the memory scheduler, which runs nothing', async () => {
      await writeFile(join(dir, 'scheduler'), 'docker\n');
      await checkSchedulerRecord(dir, 'memory', async () => ['myapp'], false, logger());
      expect(await readFile(join(dir, 'scheduler'), 'utf8')).toBe('docker\n');
    });
  });
});

describe('the readiness details', () => {
  it('are nothing when apps can run, degraded with the reasons when not, and warnings apart', () => {
    expect(readinessDetails([], [])).toEqual({});
    expect(readinessDetails(['no sandbox'], [])).toEqual({ status: 'degraded', reasons: ['no sandbox'] });
    expect(readinessDetails([], ['no stack image'])).toEqual({ warnings: ['no stack image'] });
  });
});
