import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

const PACKAGE = join(__dirname, '..', '..');

/**
 * Compiles the client's sources to JavaScript in a directory inside the package (so that its
 * dependencies resolve from node_modules), as `npm run build` would, without type checking
 * (`npm run typecheck` does that). Answers the path of the entry point.
 */
export function compileClient(): { main: string; remove: () => void } {
  const out = join(PACKAGE, `.e2e-build-${process.pid}-${Date.now()}`);
  const src = join(PACKAGE, 'src');
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') ? [path] : [];
    });
  for (const file of walk(src)) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
      fileName: file,
    });
    const target = join(out, relative(src, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  return { main: join(out, 'main.js'), remove: () => rmSync(out, { recursive: true, force: true }) };
}

/** What a finished `svc` left. */
export interface CliOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the compiled client like a user's shell does: its own HOME, a working directory, no terminal. */
export class CliRunner {
  constructor(
    private readonly main: string,
    readonly env: NodeJS.ProcessEnv,
  ) {}

  /** The same client with more environment variables. */
  with(env: NodeJS.ProcessEnv): CliRunner {
    return new CliRunner(this.main, { ...this.env, ...env });
  }

  spawn(args: readonly string[], cwd?: string): ChildProcessWithoutNullStreams {
    return spawn(process.execPath, [this.main, ...args], { cwd: cwd ?? this.env.HOME, env: this.env, stdio: 'pipe' });
  }

  run(args: readonly string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<CliOutcome> {
    return new Promise((resolve, reject) => {
      const child = this.spawn(args, options.cwd);
      child.stdin.end();
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** Runs and fails the test with the client's output unless it exits 0. */
  async ok(args: readonly string[], options: { cwd?: string } = {}): Promise<string> {
    const outcome = await this.run(args, options);
    if (outcome.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${outcome.code}:\n${outcome.stderr}${outcome.stdout}`);
    return outcome.stdout;
  }

  /** Runs with --json and parses what it printed. */
  async json<T = unknown>(args: readonly string[], options: { cwd?: string } = {}): Promise<T> {
    return JSON.parse(await this.ok([...args, '--json'], options)) as T;
  }
}
