import 'reflect-metadata';
import { Container } from 'inversify';
import pino from 'pino';
import { TOKENS, type UseCases } from '@svc/core';
import { MemoryScheduler } from '@svc/scheduler-memory';
import { ChaosScheduler } from '@svc/scheduler-chaos';
import type { ProcessScheduler, SandboxStatus } from '@svc/scheduler-process';
import { loadConfig } from '../src';
import { foreignInstanceProblem, type DockerScheduler } from '@svc/scheduler-docker';
import { SANDBOX_HINT, SchedulerStartup, boundSchedulers, schedulerModule, schedulerSetup, type ComposedSchedulers } from '../src/schedulers';
import { PreflightError } from '../src/preflight';

const logger = pino({ level: 'silent' });

/** A logger whose lines (level and message) the test reads. */
function capturingLogger(): { logger: pino.Logger; lines: () => Array<{ level: number; msg: string }> } {
  const chunks: string[] = [];
  const logger = pino({ level: 'info', base: undefined, timestamp: false }, { write: (chunk: string) => chunks.push(chunk) });
  return { logger, lines: () => chunks.map((chunk) => JSON.parse(chunk) as { level: number; msg: string }).map(({ level, msg }) => ({ level, msg })) };
}

describe('schedulerSetup', () => {
  it('gives the chosen scheduler its options: the router ports containers may reach, the process timeouts and the sandbox hint', () => {
    const config = loadConfig({ SCHEDULER: 'process', ROUTER_PORT: '8080', ROUTER_TLS_PORT: '8443', SCHEDULER_CHAOS: 'seed=3' });

    const setup = schedulerSetup(config, 'process', '/data', logger);

    expect(setup.scheduler).toBe('process');
    expect(setup.docker?.hostPortsAllowed).toEqual([8080, 8443]);
    expect(setup.processes).toEqual({
      dataDir: '/data',
      portRange: config.processes.portRange,
      startTimeoutMs: config.processes.healthcheckTimeoutMs,
      stopTimeoutMs: config.processes.stopTimeoutMs,
      sandbox: config.processes.sandbox,
      sandboxHint: SANDBOX_HINT,
      outliveController: false,
    });
    expect(setup.swarm).toBe(config.swarm);
    expect(setup.schedulerChaos).toBe(config.schedulerChaos);
    expect(setup.schedulerChaos).not.toBeNull();
  });

  it('lets the apps\' processes outlive the controller when its router runs apart (ROUTER_SOCKET), for the next controller to hold', () => {
    const apart = loadConfig({ SCHEDULER: 'process', ROUTER_SOCKET: '/run/svc/router.sock' });

    expect(schedulerSetup(apart, 'process', '/data', logger).processes?.outliveController).toBe(true);
  });

  it('lets containers reach no router port that is off or picked at random', () => {
    const config = loadConfig({ SCHEDULER: 'docker', ROUTER_PORT: '0' });

    expect(schedulerSetup(config, 'docker', '/data', logger).docker?.hostPortsAllowed).toEqual([]);
  });
});

describe('schedulerModule', () => {
  it('binds the memory scheduler, alone, as the port when SCHEDULER=memory', () => {
    const container = new Container({ defaultScope: 'Singleton' });
    container.loadSync(schedulerModule({ scheduler: 'memory' }, null));

    const bound = boundSchedulers(container, 'memory');

    expect(bound.scheduler).toBeInstanceOf(MemoryScheduler);
    expect(bound).toMatchObject({ processScheduler: null, dockerScheduler: null, swarmScheduler: null });
    // The port itself drains containers out of the router's routes before stopping them.
    expect(container.get(TOKENS.Scheduler)).not.toBe(bound.scheduler);
  });

  it('wraps the chosen scheduler in fault injection when asked', () => {
    const container = new Container({ defaultScope: 'Singleton' });
    container.loadSync(schedulerModule({ scheduler: 'memory', schedulerChaos: loadConfig({ SCHEDULER_CHAOS: 'seed=3' }).schedulerChaos }, null));

    expect(boundSchedulers(container, 'memory').scheduler).toBeInstanceOf(ChaosScheduler);
  });
});

/** A process scheduler that records what the start-up asks of it, in order. */
function recordingProcessScheduler(steps: string[], sandbox: SandboxStatus): { scheduler: ProcessScheduler; ports: Promise<[number[], number[]]> } {
  let portsSeen!: (ports: [number[], number[]]) => void;
  const ports = new Promise<[number[], number[]]>((resolve) => (portsSeen = resolve));
  const scheduler = {
    prepare: (router: Promise<number[]>, own: Promise<number[]>) => {
      steps.push('prepare sandbox');
      return Promise.all([router, own]).then((seen) => {
        portsSeen(seen);
        steps.push('sandbox ready');
        return sandbox;
      });
    },
    reapOrphans: async () => {
      steps.push('reap orphans');
      return 2;
    },
    shutdown: async () => {
      steps.push('shutdown');
    },
    detach: async () => {
      steps.push('detach');
    },
    leftovers: {
      hold: async () => {
        steps.push('hold leftovers');
        return [{ id: 'held-web-1', app: 'myapp', name: 'web.1', pid: 4242, startTime: '1' }];
      },
      stop: async (held: Array<{ id: string }>) => {
        steps.push(`stop held ${held.map((record) => record.id).join(',')}`);
        return held.length;
      },
    },
  };
  return { scheduler: scheduler as unknown as ProcessScheduler, ports };
}

function recordingUseCases(steps: string[], buildReasons: () => string[] = () => []): UseCases {
  return {
    checkBuilds: { execute: async () => buildReasons() },
    recoverDeploys: {
      execute: async (options: { all: boolean }) => {
        steps.push(`recover deploys (all: ${options.all})`);
        return { recovered: 0 };
      },
    },
    restoreContainers: {
      execute: async () => {
        steps.push('restore containers');
        return { restored: 1 };
      },
    },
  } as unknown as UseCases;
}

function composedWith(steps: string[], processScheduler: ProcessScheduler | null, buildReasons?: () => string[]): ComposedSchedulers {
  return {
    scheduler: new MemoryScheduler(),
    processScheduler,
    dockerScheduler: null,
    swarmScheduler: null,
    useCases: recordingUseCases(steps, buildReasons),
    builds: { compiler: null, docker: null },
  };
}

describe('SchedulerStartup', () => {
  it('with the process scheduler: sandbox set-up begins, orphans are reaped and deploys recovered before serving; processes restart once the ports are bound', async () => {
    const steps: string[] = [];
    const { scheduler, ports } = recordingProcessScheduler(steps, { mode: 'on' } as SandboxStatus);
    const startup = new SchedulerStartup({ shared: false, logger });

    await startup.beforeServing(composedWith(steps, scheduler));
    expect(steps).toEqual(['prepare sandbox', 'reap orphans', 'recover deploys (all: true)']);
    expect(startup.sandboxStatus).toBeNull();

    await startup.afterPortsBound({ router: [8080], own: [8000, 8080] });

    expect(await ports).toEqual([[8080], [8000, 8080]]);
    expect(steps).toEqual(['prepare sandbox', 'reap orphans', 'recover deploys (all: true)', 'sandbox ready', 'restore containers']);
    expect(startup.sandboxStatus).toEqual({ mode: 'on' });
    await startup.stop();
    expect(steps.at(-1)).toBe('shutdown');
  });

  it('with the apps kept (a router of its own): holds what the earlier controller left instead of reaping it, stops it once the routes are served, and leaves the processes running at stop', async () => {
    const steps: string[] = [];
    const { scheduler } = recordingProcessScheduler(steps, { mode: 'on' } as SandboxStatus);
    const startup = new SchedulerStartup({ shared: false, logger, keepApps: true });

    await startup.beforeServing(composedWith(steps, scheduler));
    await startup.afterPortsBound({ router: [8080], own: [8000, 8080] });
    await startup.afterRoutesServed();
    // Only once: a second call has nothing left to stop.
    await startup.afterRoutesServed();
    await startup.stop();

    expect(steps).toEqual(['prepare sandbox', 'hold leftovers', 'recover deploys (all: true)', 'sandbox ready', 'restore containers', 'stop held held-web-1', 'detach']);
  });

  it('sharing the database, recovers only expired deploys; with the memory scheduler nothing else is prepared', async () => {
    const steps: string[] = [];
    const startup = new SchedulerStartup({ shared: true, logger });

    await startup.beforeServing(composedWith(steps, null));
    await startup.afterPortsBound({ router: [], own: [] });

    expect(steps).toEqual(['recover deploys (all: false)']);
    expect(startup.readyDetails()).toEqual({});
  });

  it('says on /readyz why apps cannot run when the sandbox is unavailable', async () => {
    const steps: string[] = [];
    const { scheduler } = recordingProcessScheduler(steps, { mode: 'unavailable', problem: 'no bubblewrap' } as SandboxStatus);
    const startup = new SchedulerStartup({ shared: false, logger });

    await startup.beforeServing(composedWith(steps, scheduler));
    await startup.afterPortsBound({ router: [], own: [] });

    expect(startup.readyDetails()).toMatchObject({ sandbox: 'unavailable', warning: 'no bubblewrap' });
  });

  it('says on /readyz that builds cannot run, with the reason, logs it once in words, and is ready again once they can', async () => {
    const log = capturingLogger();
    let reasons = ['buildpack builds cannot run: the build network svc-build could not be prepared: iptables: not found'];
    const startup = new SchedulerStartup({ shared: false, logger: log.logger });

    await startup.beforeServing(composedWith([], null, () => reasons));
    await startup.afterPortsBound({ router: [], own: [] });

    expect(startup.readyDetails()).toEqual({ status: 'degraded', reasons });
    expect(startup.readyDetails()).toEqual({ status: 'degraded', reasons });
    await new Promise((resolve) => setImmediate(resolve));
    expect(log.lines().filter((line) => line.msg.includes('iptables'))).toEqual([
      { level: 50, msg: `git pushes are refused until this is fixed: ${reasons[0] as string}` },
    ]);

    reasons = [];
    startup.readyDetails();
    await new Promise((resolve) => setImmediate(resolve));

    expect(startup.readyDetails()).toEqual({});
    expect(log.lines().at(-1)).toEqual({ level: 30, msg: 'builds can run again: git pushes are built' });
  });

  it('gives the sandbox\'s sentence once on /readyz and in the log when builds cannot run for the same reason as apps', async () => {
    const log = capturingLogger();
    const problem = 'apps cannot run: the sandbox is unavailable: bubblewrap (bwrap) is not installed';
    const { scheduler } = recordingProcessScheduler([], { mode: 'unavailable', problem } as SandboxStatus);
    const startup = new SchedulerStartup({ shared: false, logger: log.logger });

    await startup.beforeServing(composedWith([], scheduler, () => [problem]));
    await startup.afterPortsBound({ router: [], own: [] });

    expect(startup.readyDetails()).toMatchObject({ status: 'degraded', reasons: [problem] });
    expect(log.lines().filter((line) => line.msg.includes('bubblewrap'))).toEqual([{ level: 50, msg: problem }]);
  });

  it('stops the schedulers and rethrows when a leftover cannot be cleaned up', async () => {
    const steps: string[] = [];
    const { scheduler } = recordingProcessScheduler(steps, { mode: 'on' } as SandboxStatus);
    const composed = composedWith(steps, scheduler);
    composed.useCases.recoverDeploys.execute = async () => Promise.reject(new Error('database gone'));
    const startup = new SchedulerStartup({ shared: false, logger });

    await expect(startup.beforeServing(composed)).rejects.toThrow('database gone');

    // The sandbox set-up is let go (with no ports), whenever it finishes; the processes are shut down.
    await new Promise((resolve) => setImmediate(resolve));
    expect(steps.slice(0, 2)).toEqual(['prepare sandbox', 'reap orphans']);
    expect([...steps.slice(2)].sort()).toEqual(['sandbox ready', 'shutdown']);
  });

  /** A Docker scheduler that records the start-up's calls; its prepare fails with `refusal` when given. */
  function recordingDockerScheduler(steps: string[], refusal: Error | null): DockerScheduler {
    const step = (name: string, value: unknown = 0) => async () => {
      steps.push(name);
      return value;
    };
    return {
      prepare: async () => {
        steps.push('prepare engine');
        if (refusal !== null) throw refusal;
      },
      survey: step('survey'),
      reapOrphans: step('reap orphans'),
      shutdown: step('shutdown', undefined),
    } as unknown as DockerScheduler;
  }

  it("with an engine scheduler: the instance is checked first, before deploys are recovered and containers adopted or removed", async () => {
    const steps: string[] = [];
    const startup = new SchedulerStartup({ shared: false, logger });

    await startup.beforeServing({ ...composedWith(steps, null), dockerScheduler: recordingDockerScheduler(steps, null) });

    expect(steps).toEqual(['prepare engine', 'recover deploys (all: true)', 'prepare engine', 'survey', 'restore containers', 'reap orphans']);
  });

  it("refuses the start with one line naming DOCKER_INSTANCE when another installation holds the instance, and touches nothing", async () => {
    const steps: string[] = [];
    const refusal = foreignInstanceProblem({ instance: 'default', installation: 'aaaaaaaaaaaaaaaa' }, [
      { kind: 'container', name: 'svc-c1', labels: { 'svc.instance': 'default', 'svc.installation': 'bbbbbbbbbbbbbbbb' } },
    ]);
    const startup = new SchedulerStartup({ shared: false, logger });

    const started = startup.beforeServing({ ...composedWith(steps, null), dockerScheduler: recordingDockerScheduler(steps, refusal) });

    await expect(started).rejects.toBeInstanceOf(PreflightError);
    await expect(started).rejects.toMatchObject({
      setting: 'DOCKER_INSTANCE',
      message:
        'DOCKER_INSTANCE: the instance "default" on this engine belongs to another installation (container svc-c1): give this installation its own DOCKER_INSTANCE, DOCKER_NETWORK and DOCKER_BRIDGE',
    });
    expect(steps).toEqual(['prepare engine', 'shutdown']);
  });
});
