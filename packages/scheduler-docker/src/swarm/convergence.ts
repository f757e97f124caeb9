/*
 * When a change of a service is done: waiting until its tasks are all of its spec, running
 * and (routed ones) healthy, or have failed with a reason; and until the tasks Swarm was told
 * to stop have stopped.
 */
import type Docker from 'dockerode';
import { formatSeconds, lastOutputNote } from '@svc/core';
import { sleep } from '@svc/supervisor-node';
import { TASK_FAILED_STATES, TASK_LIVE_STATES, callEngine, listTasks, type ServiceInfo, type TaskInfo } from './api';
import { taskView, type Service, type TaskView } from './members';
import { replicasOf } from './service-spec';
import type { SwarmSettings } from './settings';
import type { TaskWatch } from './task-watch';

/** What waiting for a service needs. */
export interface Convergence {
  docker: Docker;
  settings: Pick<SwarmSettings, 'drainMs' | 'base'>;
  watch: TaskWatch;
}

/** What a wait is for. */
export interface Awaited {
  /** The service's tasks before the change: a change's new failures are those of other tasks. */
  before: Set<string>;
  /** A rolling update (a forced restart): Swarm rolls a failed one back, and the wait fails once it did. */
  update: boolean;
  timeoutMs: number;
}

/** The ids of the service's tasks now. */
export async function taskIds(docker: Docker, service: Service): Promise<Set<string>> {
  return new Set((await listTasks(docker, { service: [service.id] })).map((t) => t.ID));
}

/**
 * Waits until the service runs as many tasks as it has replicas, every one of its current
 * spec and running (a routed one healthy), the rolling update (if any) completed; a type that
 * is not routed must then keep running for the settle time. A new task failing before that
 * fails the wait with its reason (`update`: Swarm rolls the update back first, and the wait
 * fails once the rollback completed; at the timeout the update is rolled back here).
 */
export function converge(ctx: Convergence, service: Service, how: Awaited): Promise<void> {
  return ctx.watch.often(async () => {
    const deadline = Date.now() + how.timeoutMs;
    const replicas = replicasOf(service.members);
    let rollingBack = false;
    let settledAt: number | null = null;
    for (;;) {
      const [info, tasks] = await Promise.all([
        callEngine<ServiceInfo>(ctx.docker, 'GET', `/services/${service.id}`),
        listTasks(ctx.docker, { service: [service.id] }),
      ]);
      await ctx.watch.saw(service, tasks.map(taskView));
      const update = info.UpdateStatus?.State ?? null;
      const failed = service.tasks.filter((t) => TASK_FAILED_STATES.has(t.state) && !how.before.has(t.id));
      if (how.update && update !== null && /rollback|paused/.test(update)) rollingBack = true;
      if (rollingBack) {
        if (update === 'rollback_completed' || update === 'paused' || update === 'rollback_paused' || Date.now() >= deadline) {
          throw new Error(await failure(service, failed, info.UpdateStatus?.Message ?? 'the update failed and was rolled back'));
        }
      } else if (!how.update && failed.some((t) => t.spec === service.digest)) {
        throw new Error(await failure(service, failed, null));
      } else {
        const live = service.tasks.filter((t) => t.desired === 'running');
        const current = live.filter((t) => t.spec === service.digest && t.force === service.force);
        const done = update !== 'updating' && live.length === replicas && current.length === replicas && live.every((t) => t.state === 'running');
        if (done) {
          // A routed task runs only once healthy; other types must keep running a moment.
          if (service.port !== null) return;
          settledAt ??= Date.now();
          if (Date.now() - settledAt >= ctx.settings.base.settleMs) return;
        } else {
          settledAt = null;
        }
        if (Date.now() >= deadline) {
          if (how.update) {
            // Swarm waits for a task that never gets healthy: the update is rolled back here.
            await callEngine(ctx.docker, 'POST', `/services/${service.id}/update`, { version: info.Version.Index, rollback: 'previous' }, info.Spec).catch(() => undefined);
            rollingBack = true;
          } else {
            const starting = live.filter((t) => t.state !== 'running').length;
            throw new Error(
              `${starting} task(s) of ${service.name} were not ${service.port !== null ? 'healthy' : 'running'} within ${formatSeconds(how.timeoutMs)}${lastOutputNote(service.lastLines.lines())}`,
            );
          }
        }
      }
      await sleep(200);
    }
  });
}

/** Why a change failed: the summary, the failed task's error and its last output. */
async function failure(service: Service, failed: TaskView[], summary: string | null): Promise<string> {
  // The failed task's last lines come through the log stream a moment later.
  await sleep(700);
  const task = failed[failed.length - 1];
  const reason = task ? `a task ${task.state}: ${task.err || `exit code ${task.exitCode ?? '?'}`}` : '';
  return [summary, reason].filter((part) => part).join('; ') + lastOutputNote(service.lastLines.lines());
}

/**
 * Waits until no task of the service that Swarm was told to stop still runs (`all`: no task
 * at all, the service is gone), at most the stop grace period and a little.
 */
export function waitForStops(ctx: Convergence, service: Service, all = false): Promise<void> {
  return ctx.watch.often(async () => {
    const deadline = Date.now() + ctx.settings.drainMs + ctx.settings.base.stopTimeoutMs + 10_000;
    for (;;) {
      const tasks = (await listTasks(ctx.docker, { service: [service.id] }).catch(() => [] as TaskInfo[])).map(taskView);
      await ctx.watch.saw(service, tasks);
      const live = tasks.filter((t) => TASK_LIVE_STATES.has(t.state));
      const stopping = all ? live : live.filter((t) => t.desired !== 'running');
      const extra = all ? 0 : live.filter((t) => t.desired === 'running').length - replicasOf(service.members);
      if ((stopping.length === 0 && extra <= 0) || Date.now() >= deadline) return;
      await sleep(200);
    }
  });
}
