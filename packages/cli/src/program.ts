import { Command, CommanderError } from 'commander';
import { registrar } from './command';
import { registerApps } from './commands/apps';
import { registerAuth } from './commands/auth';
import { registerConfig } from './commands/config';
import { registerEvents } from './commands/events';
import { registerProcesses } from './commands/ps';
import { registerReleases } from './commands/releases';
import { registerResources } from './commands/resources';
import { registerTls } from './commands/tls';
import { CliError, EXIT } from './errors';
import { processIo, type Io } from './output';
import { VERSION } from './version';

const EPILOG = `
Commands are named like topic:action (apps:create, config:set, ps:scale); \`svc <command> --help\` tells more.
App commands act on --app, or on the app of the \`svc\` git remote of the current checkout.
Environment: SVC_URL, SVC_TOKEN (override the profile), SVC_PROFILE, SVC_GIT_PORT, SVC_ROUTER_PORT, SVC_CONFIG (the client file).
Exit codes: 0 ok, 1 refused or failed by the server, 2 usage, 3 not logged in, 4 controller unreachable; \`svc run\` exits with the command's code.`;

/** Builds the `svc` program; `result.exitCode` holds the code of the command that ran. */
export function buildProgram(io: Io, env: NodeJS.ProcessEnv, result: { exitCode: number }): Command {
  const program = new Command('svc')
    .description('Command-line client of the platform controller: apps, config, builds, releases, processes, logs and more.')
    .version(VERSION, '-v, --version')
    .option('--json', 'print JSON for scripts instead of tables')
    .option('--profile <name>', 'the profile of the client file to use (default: SVC_PROFILE, else the current one)')
    .showHelpAfterError('(add --help for usage)')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out.write(text),
      writeErr: (text) => io.err.write(text),
    })
    .addHelpText('after', EPILOG);
  const r = registrar(program, io, env, result);
  registerAuth(r);
  registerApps(r);
  registerConfig(r);
  registerReleases(r);
  registerProcesses(r);
  registerResources(r);
  registerTls(r);
  registerEvents(r);
  return program;
}

/** Runs the client on `argv` (as process.argv) and answers the exit code; never throws. */
export async function main(argv: readonly string[], io: Io = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const result = { exitCode: EXIT.ok as number };
  const program = buildProgram(io, env, result);
  try {
    if (argv.length <= 2) {
      program.outputHelp();
      return EXIT.ok;
    }
    await program.parseAsync([...argv]);
    return result.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (error instanceof CliError) {
      io.err.write(`svc: ${error.message}\n`);
      return error.exitCode;
    }
    io.err.write(`svc: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.failed;
  }
}
