/*
 * One-off commands as Swarm jobs: one task, never restarted, removed once it ended or at its
 * timeout, its output read from the job's log and capped.
 */
import { randomUUID } from 'node:crypto';
import type { RunResult, RunSpec } from '@svc/core';
import { RUN_TIMEOUT_EXIT_CODE } from '../docker-scheduler';
import { sleep } from '@svc/supervisor-node';
import { containerPortFor } from '../images';
import { containerUserFor } from '../container-user';
import { authFor } from '../registry-login';
import { TASK_LIVE_STATES, callEngine, listTasks } from './api';
import { taskView, type TaskView } from './members';
import { jobOutput } from './service-logs';
import { jobSpec } from './service-spec';
import type { SwarmSettings } from './settings';

/**
 * Runs a one-off command as a job of the release's image, isolated like the apps' tasks, and
 * removes it; `runs` holds the jobs under way (the scheduler removes them when it shuts
 * down). A command still running at its timeout (counted from when its task runs) is removed
 * and reported with exit code 124.
 * @throws Error when the task cannot run (image, no node, engine).
 */
export async function runJob(settings: SwarmSettings, spec: RunSpec, runs: Set<string>): Promise<RunResult> {
  const { base } = settings;
  const docker = base.docker;
  const image = await base.images.inspect(spec.app, spec.image, spec.release);
  const port = containerPortFor(spec.env, image);
  const name = `${settings.prefix}-run-${randomUUID().slice(0, 13)}`;
  const body = jobSpec(settings, name, spec, port, containerUserFor(base.user, image));
  const created = await callEngine<{ ID: string }>(docker, 'POST', '/services/create', {}, body, undefined, authFor(base.registryLogin, spec.image));
  runs.add(created.ID);
  try {
    // The command's time counts from when its container runs; getting there has the start timeout.
    let deadline = Date.now() + base.startTimeoutMs + spec.timeoutSeconds * 1000;
    let running = false;
    let task: TaskView | null = null;
    for (;;) {
      const tasks = (await listTasks(docker, { service: [created.ID] })).map(taskView);
      task = tasks.find((t) => !TASK_LIVE_STATES.has(t.state)) ?? null;
      if (!running && tasks.some((t) => t.state === 'running')) {
        running = true;
        deadline = Date.now() + spec.timeoutSeconds * 1000;
      }
      if (task !== null || Date.now() >= deadline) break;
      await sleep(100);
    }
    const timedOut = task === null;
    if (task !== null && task.state === 'rejected') throw new Error(`the one-off task could not run: ${task.err || task.state}`);
    const { output, missing } = await jobOutput(docker, created.ID, spec.outputLimitBytes);
    const notes = [
      ...(timedOut ? [`killed after the timeout of ${spec.timeoutSeconds} s`] : []),
      ...(missing === null ? [] : [`the output could not be read in full: ${missing}`]),
    ];
    return { exitCode: timedOut ? RUN_TIMEOUT_EXIT_CODE : (task?.exitCode ?? 1), output: output.text(notes) };
  } finally {
    runs.delete(created.ID);
    await callEngine(docker, 'DELETE', `/services/${created.ID}`).catch(() => undefined);
  }
}
