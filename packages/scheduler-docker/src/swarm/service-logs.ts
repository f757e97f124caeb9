/*
 * The output of the tasks: each service's log followed into its app's log, a one-off job's
 * read once it ended, and the lines of a service's log as the engine sends them.
 */
import type Docker from 'dockerode';
import type { BatchedLogWriter } from '@svc/core';
import { CappedOutput } from '@svc/core';
import { sleep } from '@svc/supervisor-node';
import { followFrames, followLines, waitAtMost } from '../engine';
import { streamFromEngine } from './api';
import type { Service } from './members';

/** How long a one-off task's logs are read again while the engine cannot read all of them. */
const JOB_LOG_RETRY_MS = 10_000;
/** How long a service's log follower waits before it follows again after the engine could not read all of it. */
const FOLLOW_RETRY_AFTER_ENGINE_ERROR_MS = 5000;

/** What following a service's log needs: the engine, the log, and whether the scheduler is shutting down. */
export interface LogFollowing {
  docker: Docker;
  log: BatchedLogWriter;
  closed: () => boolean;
}

/** Follows the output of every task of the service into the app's log, from `since` (seconds). */
export function followServiceLogs(watch: LogFollowing, service: Service, since: number): void {
  const abort = new AbortController();
  service.logs = abort;
  // A stream followed again starts at the second of the last line: lines seen then are skipped.
  let recent = new Set<string>();
  let last = '';
  let from = since;
  let incomplete = false;
  const run = async (): Promise<void> => {
    while (!abort.signal.aborted && !service.gone && !watch.closed()) {
      try {
        const stream = await streamFromEngine(
          watch.docker,
          `/services/${service.id}/logs`,
          { follow: true, stdout: true, stderr: true, details: true, timestamps: true, since: from },
          abort.signal,
        );
        abort.signal.addEventListener('abort', () => stream.destroy(), { once: true });
        // A node's logs that could not be read (a node rejoining): this stream would go on
        // without them, so it is left, and followed again from the last line seen.
        const onEngineError = (): void => {
          incomplete = true;
          stream.destroy();
        };
        service.refollow = () => stream.destroy();
        await followLines(stream, (_which, line) => {
          const entry = parseServiceLogLine(line);
          const key = `${entry.stamp} ${entry.task} ${entry.message}`;
          if (recent.has(key)) return;
          if (entry.stamp.slice(0, 19) !== last.slice(0, 19)) recent = new Set();
          recent.add(key);
          if (entry.stamp !== '') last = entry.stamp;
          const slot = service.tasks.find((t) => t.id === entry.task)?.slot;
          service.lastLines.push(entry.message);
          watch.log.write(service.app, `${service.app}[${service.type}.${slot ?? '?'}]`, entry.message);
        }, onEngineError);
      } catch {
        // The service went, or the manager did not answer: tried again below while the service exists.
      }
      service.refollow = null;
      const stamp = Date.parse(last);
      if (Number.isFinite(stamp)) from = Math.floor(stamp / 1000);
      await sleep(incomplete ? FOLLOW_RETRY_AFTER_ENGINE_ERROR_MS : 1000);
      incomplete = false;
    }
  };
  void run();
}

/**
 * A finished one-off task's output, from its service's logs. While the engine says part of
 * them could not be read (the task's node not reachable just then, e.g. rejoining the
 * swarm), they are read again, for up to JOB_LOG_RETRY_MS; then the error goes with what was read.
 */
export async function jobOutput(docker: Docker, serviceId: string, limit: number): Promise<{ output: CappedOutput; missing: string | null }> {
  const deadline = Date.now() + JOB_LOG_RETRY_MS;
  for (;;) {
    const output = new CappedOutput(limit);
    let missing: string | null = null;
    const stream = await streamFromEngine(docker, `/services/${serviceId}/logs`, { stdout: true, stderr: true });
    await waitAtMost(followFrames(stream, (_which, payload) => output.push(payload), (error) => (missing ??= error)), 5000);
    stream.destroy();
    if (missing === null || Date.now() >= deadline) return { output, missing };
    await sleep(500);
  }
}

/** A line of a service's log with details and timestamps: `<time> <k=v,...> <message>`. */
export function parseServiceLogLine(line: string): { stamp: string; task: string; message: string } {
  const first = line.indexOf(' ');
  if (first < 0 || !/^[0-9]{4}-/.test(line)) return { stamp: '', task: '', message: line };
  const stamp = line.slice(0, first);
  const rest = line.slice(first + 1);
  const second = rest.indexOf(' ');
  const details = second < 0 ? rest : rest.slice(0, second);
  if (!details.includes('com.docker.swarm.')) return { stamp, task: '', message: rest };
  const task = /com\.docker\.swarm\.task\.id=([a-z0-9]+)/.exec(details)?.[1] ?? '';
  return { stamp, task, message: second < 0 ? '' : rest.slice(second + 1) };
}
