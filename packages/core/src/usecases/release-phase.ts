import type { App, Build, LogEntry } from '../model/entities';
import { escapeLogEntry } from '../model/log-escape';
import { releaseEnvironment } from '../rules/config';
import { lastLines, releasePhaseCommand, releasePhaseFailure, runTimedOut } from '../rules/releases';
import { DEFAULT_RUNS_PER_USER, runSlotsOf } from '../rules/run-slots';
import { logEvent, type CoreDependencies } from './context';
import type { ReleaseState } from './deploy';
import { schedulerFailure } from './scheduler-failure';

/** The source of the release phase's output in the app's log. */
export const RELEASE_PHASE_LOG_SOURCE = 'svc[release]';

/** The most lines of a release phase's output written to the app's log in one append. */
const LOG_BATCH = 500;

/**
 * Runs the release phase of a new release whose build has a `release` process type: its
 * command once, on the new build with the new config and version, before any of the
 * release's processes start. Its output goes to the app's log (`svc[release]`) and to
 * `output`. A build without `release` does nothing. It holds one of the app owner's run slots
 * while it runs, as a `run` does (ADR 0037).
 * @throws TooMany (`RUN.TOO_MANY`) when the owner's apps already run `settings.runsPerUser`
 *   one-off processes (nothing ran); Unavailable `RELEASE.PHASE_FAILED` when it exits
 *   non-zero or times out (with its exit code or the timeout and its last lines); Unavailable
 *   `SCHEDULER.FAILED` when the scheduler cannot run it.
 */
export async function runReleasePhase(
  deps: Pick<CoreDependencies, 'scheduler' | 'settings' | 'logs' | 'clock' | 'uow' | 'timer' | 'ids' | 'runSlots'>,
  app: App,
  state: ReleaseState & { build: Build },
  output: (line: string) => void,
): Promise<void> {
  const command = releasePhaseCommand(state.build.procfile);
  if (command === null) return;
  const releaseSlot = await runSlotsOf(deps).take(app.owner, deps.settings.runsPerUser ?? DEFAULT_RUNS_PER_USER);
  try {
    await runCommand(deps, app, state, command, output);
  } finally {
    await releaseSlot();
  }
}

/** Runs the release phase's command and reports its outcome (see runReleasePhase). */
async function runCommand(
  deps: Pick<CoreDependencies, 'scheduler' | 'settings' | 'logs' | 'clock'>,
  app: App,
  state: ReleaseState & { build: Build },
  command: string,
  output: (line: string) => void,
): Promise<void> {
  const version = state.release.version;
  const timeoutSeconds = deps.settings.releasePhaseTimeoutSeconds;
  output(`Running the release phase of v${version}: ${command}`);
  await logEvent(deps, app.id, `release phase of v${version} started: ${command}`, RELEASE_PHASE_LOG_SOURCE);
  let result;
  try {
    result = await deps.scheduler.run({
      app: app.id,
      release: version,
      image: state.build.image,
      workdir: state.build.workdir ?? null,
      command,
      env: releaseEnvironment(state.config.values, app.id, version),
      timeoutSeconds,
      outputLimitBytes: deps.settings.runOutputLimitBytes,
    });
  } catch (error) {
    const failure = schedulerFailure(`run the release phase of v${version}`, error);
    await logEvent(deps, app.id, `release phase of v${version} failed: ${failure.message}`, RELEASE_PHASE_LOG_SOURCE);
    throw failure;
  }
  const lines = lastLines(result.output, Number.MAX_SAFE_INTEGER);
  for (const line of lines) output(line);
  await appendLines(deps, app.id, lines);
  const failure = releasePhaseFailure(version, result, timeoutSeconds);
  if (failure !== null) {
    const how = runTimedOut(result) ? `timed out after ${timeoutSeconds} s` : `exited with code ${result.exitCode}`;
    await logEvent(deps, app.id, `release phase of v${version} ${how}; v${version} was not released`, RELEASE_PHASE_LOG_SOURCE);
    throw failure;
  }
  output(`Release phase of v${version} succeeded`);
  await logEvent(deps, app.id, `release phase of v${version} succeeded`, RELEASE_PHASE_LOG_SOURCE);
}

/** Writes the release phase's output to the app's log. Best effort, as every controller line. */
async function appendLines(deps: Pick<CoreDependencies, 'logs' | 'clock'>, appId: string, lines: string[]): Promise<void> {
  const time = deps.clock.now();
  for (let start = 0; start < lines.length; start += LOG_BATCH) {
    const entries: LogEntry[] = lines.slice(start, start + LOG_BATCH).map((message) => escapeLogEntry({ time, source: RELEASE_PHASE_LOG_SOURCE, message }));
    try {
      await deps.logs.append(appId, entries);
    } catch {
      // The log is informational: the release phase's outcome decides the release.
    }
  }
}
