/*
 * How the networks' guards reach iptables. A guard is a list of steps (pure data, built by
 * host-guard.ts and build-network.ts); a runner runs the whole list at once, as one sh script,
 * either on this machine (`iptables` on PATH, as root) or in one short-lived helper container
 * on the engine (iptables-engine.ts), for a controller that cannot run iptables itself. Both
 * runners run the very same script, so a guard means the same wherever it is installed.
 */
import { execFile } from 'node:child_process';

/** One iptables command of a guard, and when it runs. */
export interface IptablesStep {
  /** Its arguments, after `iptables -w`. */
  args: readonly string[];
  /**
   * `must`: a failure ends the run and is reported; `may`: a failure is fine; `repeat`: run
   * again until it fails (every copy of a rule goes; its last failure is the expected end).
   */
  kind: 'must' | 'may' | 'repeat';
  /** Run only when each of these commands succeeds (e.g. `-S DOCKER-USER`: the chain exists). */
  when?: readonly (readonly string[])[];
  /** Run only when each of these commands fails (e.g. `-C INPUT …`: the rule is not there yet). */
  unless?: readonly (readonly string[])[];
}

/** What one step that ran did (its last run, for a `repeat`). */
export interface IptablesOutcome {
  /** The step's index in the list. */
  step: number;
  ok: boolean;
  /** What iptables printed (standard output and error), trimmed. */
  output: string;
}

/** Runs guards' steps somewhere iptables can change the engine machine's rules. */
export interface IptablesRunner {
  /** Where the commands run, for messages. */
  readonly where: string;
  /**
   * Runs the steps in order, in one go; resolves with the outcome of each step that ran (a
   * failed `must` step is the last).
   * @throws Error when the steps could not be run at all (no sh, the helper container refused).
   */
  run(steps: readonly IptablesStep[]): Promise<IptablesOutcome[]>;
}

/** Which runner installs the guards (`DOCKER_GUARDS`): chosen at the first use, this machine's iptables, or a helper container on the engine. */
export type GuardRunnerChoice = 'auto' | 'local' | 'engine';

/** Single-quotes a word for sh. */
const quoted = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

const words = (args: readonly string[]): string => args.map(quoted).join(' ');

/** The most times a `repeat` step runs (a rule is never inserted this often). */
const REPEAT_LIMIT = 64;

/**
 * The sh script that runs `steps` with `iptables` (the command words, e.g. `iptables -w` or
 * `chroot /host iptables -w`). It prints, for each run of a step, its output lines as
 * `o <index> <line>` and its exit status as `r <index> <status>`; it exits 1 at the first
 * failed `must` step, 0 otherwise.
 */
export function iptablesScript(steps: readonly IptablesStep[], iptables: readonly string[]): string {
  const command = words(iptables);
  const lines = [
    'run() {',
    '  i=$1; shift',
    `  out=$(${command} "$@" 2>&1); rc=$?`,
    '  [ -z "$out" ] || printf \'%s\\n\' "$out" | sed "s/^/o $i /"',
    '  echo "r $i $rc"',
    '  return $rc',
    '}',
    `ok() { ${command} "$@" >/dev/null 2>&1; }`,
  ];
  steps.forEach((step, index) => {
    const run = `run ${index} ${words(step.args)}`;
    const body =
      step.kind === 'must' ? `${run} || exit 1` : step.kind === 'may' ? `${run} || :` : `n=0; while [ $n -lt ${REPEAT_LIMIT} ] && ${run}; do n=$((n + 1)); done`;
    const conditions = [...(step.when ?? []).map((check) => `ok ${words(check)}`), ...(step.unless ?? []).map((check) => `! ok ${words(check)}`)];
    lines.push(conditions.length === 0 ? body : `if ${conditions.join(' && ')}; then ${body}; fi`);
  });
  lines.push('exit 0', '');
  return lines.join('\n');
}

/** The outcomes a script of {@link iptablesScript} printed, by step, in step order. */
export function outcomesOf(text: string): IptablesOutcome[] {
  const byStep = new Map<number, { ok: boolean; output: string[] }>();
  const pending = new Map<number, string[]>();
  for (const line of text.split('\n')) {
    const match = /^([or]) (\d+) ?(.*)$/.exec(line.replace(/\r$/, ''));
    if (!match) continue;
    const step = Number(match[2]);
    if (match[1] === 'o') {
      pending.set(step, [...(pending.get(step) ?? []), match[3] ?? '']);
    } else {
      byStep.set(step, { ok: match[3] === '0', output: pending.get(step) ?? [] });
      pending.delete(step);
    }
  }
  return [...byStep.entries()].sort(([a], [b]) => a - b).map(([step, { ok, output }]) => ({ step, ok, output: output.join('\n').trim() }));
}

/**
 * The first failed `must` step of a run as an error naming the command, where it ran and what
 * iptables said; null when every `must` step that ran succeeded.
 */
export function failureOf(steps: readonly IptablesStep[], outcomes: readonly IptablesOutcome[], where: string): Error | null {
  for (const outcome of outcomes) {
    const step = steps[outcome.step];
    if (step?.kind === 'must' && !outcome.ok) return new Error(`iptables ${step.args.join(' ')} (${where}): ${outcome.output || 'failed'}`);
  }
  return null;
}

/**
 * Runs the steps and checks them; nothing runs for no steps.
 * @throws Error naming the first failed `must` step, or why the steps could not run.
 */
export async function applySteps(runner: IptablesRunner, steps: readonly IptablesStep[]): Promise<void> {
  if (steps.length === 0) return;
  const failure = failureOf(steps, await runner.run(steps), runner.where);
  if (failure !== null) throw failure;
}

/** The command of this machine's iptables: the one on PATH, waiting for the xtables lock. */
export const LOCAL_IPTABLES: readonly string[] = ['iptables', '-w'];

/** Runs the script with this machine's `iptables` (or another command of the same interface), in one `sh`. */
export class LocalIptables implements IptablesRunner {
  readonly where = 'on this machine';

  constructor(private readonly command: readonly string[] = LOCAL_IPTABLES) {}

  run(steps: readonly IptablesStep[]): Promise<IptablesOutcome[]> {
    return new Promise((resolve, reject) => {
      execFile('sh', ['-c', iptablesScript(steps, this.command)], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
        const code = (error as { code?: unknown } | null)?.code;
        if (error !== null && code !== 1) reject(new Error(`the iptables script could not run on this machine: ${stderr.trim() || error.message}`));
        else resolve(outcomesOf(stdout));
      });
    });
  }
}

/** The runner of this machine's iptables. */
export const localIptables: IptablesRunner = new LocalIptables();

/** Whether this machine's iptables (`command`, default `iptables -w`) can read the filter table: it is there and we may use it. */
export function localIptablesWorks(command: readonly string[] = LOCAL_IPTABLES): Promise<boolean> {
  const [file = 'iptables', ...args] = command;
  return new Promise((resolve) => execFile(file, [...args, '-S', 'INPUT'], { timeout: 10_000 }, (error) => resolve(error === null)));
}
