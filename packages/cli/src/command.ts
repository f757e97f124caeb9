import type { Command } from 'commander';
import { Context } from './context';
import type { Io } from './output';

/** A command's work: answers an exit code, or nothing for 0. */
export type Handler = (ctx: Context, args: string[], options: Record<string, unknown>) => Promise<number | void>;

/** What command modules register their commands with. */
export interface Registrar {
  /** Adds `name` (e.g. `apps:create [name]`) with a description; `handler` runs it. */
  command(spec: string, description: string, handler: Handler, setup?: (command: Command) => void): Command;
}

/** Builds a registrar on a commander program that records each command's exit code in `result`. */
export function registrar(program: Command, io: Io, env: NodeJS.ProcessEnv, result: { exitCode: number }): Registrar {
  return {
    command(spec, description, handler, setup) {
      const command = program.command(spec).description(description);
      setup?.(command);
      command.action(async (...params: unknown[]) => {
        const self = params[params.length - 1] as Command;
        const options = params[params.length - 2] as Record<string, unknown>;
        const args = params.slice(0, -2).flatMap((a) => (Array.isArray(a) ? (a as string[]) : a === undefined ? [] : [String(a)]));
        const code = await handler(new Context(io, self, env), args, options);
        result.exitCode = typeof code === 'number' ? code : 0;
      });
      return command;
    },
  };
}

/** The option every app-scoped command takes. */
export function appOption(command: Command): void {
  command.option('-a, --app <app>', 'the app (default: the app of the `svc` git remote of this checkout)');
}
