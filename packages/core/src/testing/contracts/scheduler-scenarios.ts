/// <reference types="jest" />
import type { Build, Container } from '../../model/entities';
import type { ContainerSpec, Scheduler } from '../../ports/services';
import { IMAGE_PROCESS_TYPE } from '../../rules/releases';
import { Rollout, type ReleaseState } from '../../usecases/deploy';
import { aBuild, aConfig, aRelease, anApp } from '../builders';
import { InMemoryLogStore } from '../in-memory-log-store';
import { contractUuid, type OpenedScheduler } from './scheduler';

/**
 * The multi-container scenarios of the scheduler contract, by name: what a setup names to
 * declare one not applicable (with why) or a known failure of its scheduler.
 */
export const SCHEDULER_SCENARIOS = [
  'rollout',
  'failed-start-rollout',
  'failed-readiness-rollout',
  'slow-start-web',
  `slow-start-${IMAGE_PROCESS_TYPE}`,
  'restart',
  'scale',
  'adopt',
  'answers',
] as const;

/** One multi-container scenario of the scheduler contract. */
export type SchedulerScenario = (typeof SCHEDULER_SCENARIOS)[number];

/** The process types the router sends requests to (`cmd`, an image's own command, when an app has no `web`). */
export const CONTRACT_ROUTED_TYPES = ['web', IMAGE_PROCESS_TYPE] as const;

/** The command of a process that exits before it listens; a test double makes starts of it fail. */
export const CONTRACT_FAILING_COMMAND = 'echo giving up; exit 3';

/** The command of a process that keeps running and never listens. */
export const CONTRACT_IDLE_COMMAND = 'exec sleep 3600';

/** How the multi-container scenarios run against one scheduler. */
export interface SchedulerScenarioSetup {
  /** Opens a scheduler on its own backend; called once for the scenarios, and once more for the adoption. */
  open(): Promise<OpenedScheduler>;
  /**
   * A new scheduler instance on the same backend as `first`, as a restarted controller process
   * makes it: `first` is let go as the controller lets go when it stops. Closing the one it
   * returns, then `first`, removes everything. Required unless `adopt` is not applicable.
   */
  reopen?(first: OpenedScheduler): Promise<OpenedScheduler>;
  /** The image the specs name (ignored by schedulers that run commands as processes). */
  image: string;
  /**
   * A POSIX shell command that waits `delaySeconds`, then serves HTTP on `$PORT`, answering
   * every GET of `/` with `$SVC_RELEASE` and a token of its own, separated by a space: a
   * restarted process answers another token.
   */
  serve(delaySeconds: number): string;
  /**
   * What the `up` containers of one type of an app answer right now (one body per container
   * that answers, as `serve` answers), asked where the scheduler says they listen. Required
   * unless `answers` is not applicable; without it the scenarios check the states only.
   */
  probe?(scheduler: Scheduler, app: string, type: string): Promise<string[]>;
  /** Scenarios this scheduler cannot support by nature, with the reason (printed in the test names). */
  notApplicable?: Partial<Record<SchedulerScenario, string>>;
  /**
   * Scenarios this scheduler is known to fail, with what fails: they run as tests that must
   * fail (`it.failing`), so the suite turns red once the scheduler is fixed and the entry is
   * to be removed.
   */
  knownFailures?: Partial<Record<SchedulerScenario, string>>;
  /**
   * Set (to how) when the engine rolls a process type itself (Swarm's rolling update): the
   * old containers of a type may then be reported `down` once the new ones are up, before the
   * core stops them; without it they must still be `up`. What answers must never be nothing.
   */
  nativeRollout?: string;
  /** Longest wait for one scenario, ms. Default 120000. */
  timeoutMs?: number;
  /** How long endpoints may take to show a change, ms (schedulers that read them by polling). Default 10000. */
  settleMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Reads until `ok` holds or `withinMs` has passed, and resolves with the last value read. */
async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() >= deadline) return value;
    await sleep(200);
  }
}

/** The releases (`v3`) in answers, sorted. */
export function releasesOf(answers: readonly string[]): string[] {
  return answers.map((answer) => answer.split(' ')[0] ?? '').sort();
}

/** Reads what a type answers over and over until stopped; counts the reads that found nothing answering. */
function watchAnswers(read: () => Promise<string[]>): { stop(): Promise<{ reads: number; silent: number }> } {
  let running = true;
  const seen = { reads: 0, silent: 0 };
  const loop = (async () => {
    while (running) {
      const answers = await read().catch(() => []);
      seen.reads++;
      if (answers.length === 0) seen.silent++;
      await sleep(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return seen;
    },
  };
}

/**
 * Registers the multi-container scenarios of the Scheduler port: a rollout through the
 * core's own `Rollout` (new up before old stop), a failed rollout keeping the old, a slow
 * routed process reported up only once it answers, the restart of one container, scaling up
 * and down, and the adoption of running containers by a new scheduler instance.
 */
export function describeSchedulerScenarios(label: string, setup: SchedulerScenarioSetup): void {
  describe(`${label}: Scheduler contract, several containers`, () => {
    const timeout = setup.timeoutMs ?? 120_000;
    const settle = setup.settleMs ?? 10_000;
    const notApplicable = setup.notApplicable ?? {};
    const knownFailures = setup.knownFailures ?? {};
    let opened: OpenedScheduler | undefined;
    const started = new Set<string>();
    let apps = 0;
    const app = (): string => `scenario-${process.pid.toString(36)}-${++apps}`;
    const scheduler = (): Scheduler => {
      if (opened === undefined) throw new Error('The scheduler is only open while the suite runs');
      return opened.scheduler;
    };
    const probe = setup.probe === undefined || notApplicable.answers !== undefined ? null : setup.probe.bind(setup);
    const answers = (on: Scheduler, appId: string, type: string): Promise<string[]> => (probe === null ? Promise.resolve([]) : probe(on, appId, type));
    /** Reads the answers of a type until `ok` holds (endpoints may take a moment to show a change). */
    const answersOnce = (on: Scheduler, appId: string, type: string, ok: (found: string[]) => boolean): Promise<string[]> =>
      probe === null ? Promise.resolve([]) : eventually(() => answers(on, appId, type), ok, settle);

    const spec = (appId: string, type: string, num: number, command: string, release = 3): ContainerSpec => {
      const made: ContainerSpec = {
        id: contractUuid(),
        app: appId,
        type,
        num,
        release,
        image: setup.image,
        command,
        workdir: null,
        env: { SVC_APP: appId, SVC_RELEASE: `v${release}` },
        memory: null,
        cpu: null,
      };
      started.add(made.id);
      return made;
    };

    /** A release of the app whose Procfile is `procfile`, as the core hands it to a Rollout. */
    const release = (appId: string, version: number, procfile: Record<string, string>, values: Record<string, string> = {}): ReleaseState & { build: Build } => ({
      release: aRelease({ app: appId, version }),
      build: aBuild({ app: appId, image: setup.image, procfile }),
      config: aConfig({ app: appId, values }),
    });
    const rollout = (on: Scheduler, appId: string): Rollout =>
      new Rollout({ scheduler: on, ids: { uuid: contractUuid }, clock: { now: () => new Date() }, logs: new InMemoryLogStore() }, anApp({ id: appId, owner: 'contract' }));
    /** Starts web ×2 and worker ×1 of release v3 through a Rollout; resolves with the containers planned. */
    const deployOld = async (appId: string): Promise<Container[]> => {
      const old = rollout(scheduler(), appId);
      const state = release(appId, 3, { web: setup.serve(0), worker: CONTRACT_IDLE_COMMAND });
      const planned = [old.plan(state, 'web', 1), old.plan(state, 'web', 2), old.plan(state, 'worker', 1)];
      for (const id of old.starting) started.add(id);
      await old.startAll();
      await old.finish();
      return planned;
    };
    /** The record Rollout.retire takes (only its uuid matters to the scheduler). */
    const retired = (container: Container): Container => ({ ...container, state: 'up' });
    const upStates = (ids: string[]): Map<string, string> => new Map(ids.map((id) => [id, 'up']));

    /** Registers a scenario: as a test, a test that must fail (known failure), or a statement of why it does not apply. */
    const scenario = (name: SchedulerScenario, title: string, body: () => Promise<void>): void => {
      const why = notApplicable[name];
      if (why !== undefined) {
        describe(`${name}: not applicable to ${label}: ${why}`, () => {
          it('the setup says why', () => expect(why.trim()).not.toBe(''));
        });
        return;
      }
      const failure = knownFailures[name];
      if (failure !== undefined) {
        it.failing(`${name}: ${title} [KNOWN FAILURE of ${label}: ${failure}]`, body, timeout);
        return;
      }
      it(`${name}: ${title}`, body, timeout);
    };

    beforeAll(async () => {
      opened = await setup.open();
    }, timeout);

    // What a scenario started goes with it, failed or not: the next one starts on a clean backend.
    afterEach(async () => {
      if (opened === undefined) return;
      for (const id of started) await opened.scheduler.stop(id).catch(() => undefined);
      started.clear();
    }, timeout);

    afterAll(async () => {
      await opened?.close();
    }, timeout);

    if (probe === null) {
      const why = notApplicable.answers ?? '';
      describe(`answers: not applicable to ${label}: ${why}`, () => {
        it('the setup says why (the scenarios check the reported states only)', () => expect(why.trim()).not.toBe(''));
      });
    }

    scenario('rollout', 'a new release of web ×2 and worker ×1 replaces the old through Rollout: the new is up (and answers) before any old container stops, then only the new runs', async () => {
      const appId = app();
      const oldContainers = await deployOld(appId);
      const old = oldContainers.map((c) => c.uuid);
      await expect(scheduler().states(old)).resolves.toEqual(upStates(old));
      expect(releasesOf(await answersOnce(scheduler(), appId, 'web', (a) => a.length === 2))).toEqual(probe === null ? [] : ['v3', 'v3']);

      const watch = probe === null ? null : watchAnswers(() => answers(scheduler(), appId, 'web'));
      const next = rollout(scheduler(), appId);
      const state = release(appId, 4, { web: setup.serve(1), worker: CONTRACT_IDLE_COMMAND });
      next.plan(state, 'web', 1);
      next.plan(state, 'web', 2);
      next.plan(state, 'worker', 1);
      for (const container of oldContainers) next.retire(retired(container));
      const fresh = next.starting;
      for (const id of fresh) started.add(id);
      await next.startAll();
      await expect(scheduler().states(fresh)).resolves.toEqual(upStates(fresh));
      // Both releases up: the old containers stop only once the new ones are (an engine that
      // rolls a type itself has replaced them one by one, each new task up first).
      const oldNow = [...(await scheduler().states(old)).values()];
      expect(oldNow.filter((state) => state !== 'up' && (setup.nativeRollout === undefined || state !== 'down'))).toEqual([]);
      const during = await answersOnce(scheduler(), appId, 'web', (a) => releasesOf(a).filter((r) => r === 'v4').length === 2);
      expect(releasesOf(during).filter((r) => r === 'v4')).toEqual(probe === null ? [] : ['v4', 'v4']);

      await next.finish();
      const seen = (await watch?.stop()) ?? { reads: 0, silent: 0 };
      await expect(scheduler().states([...old, ...fresh])).resolves.toEqual(upStates(fresh));
      expect(releasesOf(await answersOnce(scheduler(), appId, 'web', (a) => releasesOf(a).join() === 'v4,v4'))).toEqual(probe === null ? [] : ['v4', 'v4']);
      // At no moment of the rollout did the type have nothing answering.
      expect(seen.silent).toBe(0);
      for (const id of fresh) await scheduler().stop(id);
    });

    const failedRollout = (name: 'failed-start-rollout' | 'failed-readiness-rollout', how: string, web: string, values: Record<string, string>): void =>
      scenario(name, `a rollout whose new web process ${how} fails: nothing of the new release keeps running, the old keeps running and answering`, async () => {
        const appId = app();
        const oldContainers = await deployOld(appId);
        const old = oldContainers.map((c) => c.uuid);
        const next = rollout(scheduler(), appId);
        const state = release(appId, 4, { web, worker: CONTRACT_IDLE_COMMAND }, values);
        // The worker first: the failure comes after something of the new release was started.
        next.plan(state, 'worker', 1);
        next.plan(state, 'web', 1);
        next.plan(state, 'web', 2);
        for (const container of oldContainers) next.retire(retired(container));
        const fresh = next.starting;
        for (const id of fresh) started.add(id);
        const failure = await next.startAll().then(
          () => null,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(Error);
        expect((failure as Error).message).toMatch(/^The scheduler failed to start/);
        await expect(scheduler().states(fresh)).resolves.toEqual(new Map());
        await expect(scheduler().states(old)).resolves.toEqual(upStates(old));
        expect(releasesOf(await answersOnce(scheduler(), appId, 'web', (a) => releasesOf(a).join() === 'v3,v3'))).toEqual(probe === null ? [] : ['v3', 'v3']);
        for (const id of old) await scheduler().stop(id);
      });
    failedRollout('failed-start-rollout', 'exits before it listens', CONTRACT_FAILING_COMMAND, {});
    failedRollout('failed-readiness-rollout', 'keeps running but never answers (its readiness times out)', CONTRACT_IDLE_COMMAND, { HEALTHCHECK_TIMEOUT: '8' });

    for (const type of CONTRACT_ROUTED_TYPES) {
      scenario(`slow-start-${type}`, `a ${type} process (routed) that answers only after 3 s is reported up only once it answers`, async () => {
        const appId = app();
        const s = spec(appId, type, 1, setup.serve(3));
        await expect(scheduler().start(s)).resolves.toBe('up');
        // Asked once, right away: `up` means the router may send requests now. Asked again
        // later only to tell, when it fails, a start reported early from one never answering.
        const rightAway = releasesOf(await answers(scheduler(), appId, type));
        const later = releasesOf(await answersOnce(scheduler(), appId, type, (a) => a.length === 1));
        expect({ rightAway, later }).toEqual(probe === null ? { rightAway: [], later: [] } : { rightAway: ['v3'], later: ['v3'] });
        await expect(scheduler().states([s.id])).resolves.toEqual(upStates([s.id]));
        await scheduler().stop(s.id);
      });
    }

    scenario('restart', 'starting a running container again restarts it: up, answering as a new process, the other of its type still up', async () => {
      const appId = app();
      const first = spec(appId, 'web', 1, setup.serve(0));
      const second = spec(appId, 'web', 2, setup.serve(0));
      await scheduler().start(first);
      await scheduler().start(second);
      const before = await answersOnce(scheduler(), appId, 'web', (a) => a.length === 2);
      expect(before).toHaveLength(probe === null ? 0 : 2);
      await expect(scheduler().start(first)).resolves.toBe('up');
      await expect(scheduler().states([first.id, second.id])).resolves.toEqual(upStates([first.id, second.id]));
      const after = await answersOnce(scheduler(), appId, 'web', (a) => a.length === 2 && a.some((answer) => !before.includes(answer)));
      expect(after).toHaveLength(probe === null ? 0 : 2);
      expect(after.filter((answer) => !before.includes(answer)).length).toBeGreaterThanOrEqual(probe === null ? 0 : 1);
      await scheduler().stop(first.id);
      await scheduler().stop(second.id);
    });

    scenario('scale', 'a type scaled from 1 to 3 containers and back to 1: each start is up, each stop leaves the states, the answers follow', async () => {
      const appId = app();
      const web = [1, 2, 3].map((num) => spec(appId, 'web', num, setup.serve(0)));
      const ids = web.map((s) => s.id);
      for (const s of web) await expect(scheduler().start(s)).resolves.toBe('up');
      await expect(scheduler().states(ids)).resolves.toEqual(upStates(ids));
      expect(await answersOnce(scheduler(), appId, 'web', (a) => a.length === 3)).toHaveLength(probe === null ? 0 : 3);
      await scheduler().stop(ids[2] as string);
      await scheduler().stop(ids[1] as string);
      await expect(scheduler().states(ids)).resolves.toEqual(upStates([ids[0] as string]));
      expect(await answersOnce(scheduler(), appId, 'web', (a) => a.length === 1)).toHaveLength(probe === null ? 0 : 1);
      await scheduler().stop(ids[0] as string);
      await expect(scheduler().states(ids)).resolves.toEqual(new Map());
    });

    scenario('adopt', 'a new scheduler instance on the same backend adopts the running containers when the core restores them: up, the very same processes', async () => {
      if (setup.reopen === undefined) throw new Error(`${label}: the setup has no reopen, and does not declare adopt not applicable`);
      const first = await setup.open();
      let second: OpenedScheduler | null = null;
      try {
        const appId = app();
        const specs = [spec(appId, 'web', 1, setup.serve(0)), spec(appId, 'web', 2, setup.serve(0)), spec(appId, 'worker', 1, CONTRACT_IDLE_COMMAND)];
        const ids = specs.map((s) => s.id);
        for (const s of specs) await first.scheduler.start(s);
        const before = await answersOnce(first.scheduler, appId, 'web', (a) => a.length === 2);
        expect(before).toHaveLength(probe === null ? 0 : 2);
        second = await setup.reopen(first);
        // What RestoreContainers does: start each recorded container with its id and spec.
        for (const s of specs) await expect(second.scheduler.start(s)).resolves.toBe('up');
        await expect(second.scheduler.states(ids)).resolves.toEqual(upStates(ids));
        const after = await answersOnce(second.scheduler, appId, 'web', (a) => a.length === 2);
        expect([...after].sort()).toEqual([...before].sort());
        for (const id of ids) await second.scheduler.stop(id);
      } finally {
        await second?.close();
        await first.close();
      }
    });
  });
}
