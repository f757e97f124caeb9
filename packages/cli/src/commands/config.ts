import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { seg } from '../api';
import { appOption, type Registrar } from '../command';
import type { Context } from '../context';
import { CliError, UsageError } from '../errors';
import { SERVICE_VARIABLES, assignments, formatDotenv, parseDotenv } from '../dotenv';
import { print, printJson, printTable, withProgress } from '../output';

/** A config as the API shows it. */
interface ConfigJson {
  values: Record<string, string>;
  memory: Record<string, string>;
  cpu: Record<string, number>;
  tags: Record<string, string>;
}

const configPath = (app: string): string => `/v1/apps/${seg(app)}/config/`;

function parsedAssignments(args: readonly string[], what: string): Record<string, string> {
  try {
    return assignments(args, what);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** Posts a config change and reports the release it made. */
async function change(ctx: Context, label: string, body: Partial<Record<keyof ConfigJson, Record<string, unknown>>>): Promise<ConfigJson> {
  const app = ctx.app();
  const response = await withProgress(ctx.io, `${label} on ${app}, restarting`, () => ctx.authed().request('POST', configPath(app), { body }));
  const config = response.body as ConfigJson;
  if (ctx.json) printJson(ctx.io, config);
  else print(ctx.io, `${label} on ${app}: release v${response.headers.get('svc-release') ?? '?'}`);
  return config;
}

const userValues = (values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).filter(([key]) => !SERVICE_VARIABLES.includes(key)));

/** config, config:set, config:unset, config:pull, config:push, limits, tags. */
export function registerConfig(r: Registrar): void {
  r.command(
    'config',
    "list an app's config variables",
    async (ctx, _args, options) => {
      const config = await ctx.authed().get<ConfigJson>(configPath(ctx.app()));
      if (ctx.json) printJson(ctx.io, config);
      else if (options.shell === true) ctx.io.out.write(formatDotenv(config.values));
      else printTable(ctx.io, ['name', 'value'], Object.keys(config.values).sort().map((k) => [k, config.values[k]]), 'no config');
    },
    (c) => {
      c.alias('config:list').option('-s, --shell', 'print KEY=VALUE lines');
      appOption(c);
    },
  );

  r.command(
    'config:set <assignments...>',
    'set config variables (KEY=VALUE ...): a new release, processes restart',
    async (ctx, args) => {
      await change(ctx, `Set ${args.map((a) => a.split('=')[0]).join(', ')}`, { values: parsedAssignments(args, 'KEY=VALUE') });
    },
    appOption,
  );

  r.command(
    'config:unset <keys...>',
    'unset config variables: a new release, processes restart',
    async (ctx, keys) => {
      await change(ctx, `Unset ${keys.join(', ')}`, { values: Object.fromEntries(keys.map((k) => [k, null])) });
    },
    appOption,
  );

  r.command(
    'config:pull',
    "write an app's config to a .env file (without the platform's SVC_APP and SVC_RELEASE)",
    async (ctx, _args, options) => {
      const file = String(options.output);
      const values = userValues((await ctx.authed().get<ConfigJson>(configPath(ctx.app()))).values);
      const local = existsSync(file) && options.overwrite !== true ? parseDotenv(readFileSync(file, 'utf8')) : {};
      // Without --overwrite, what the local file already says wins.
      const merged = { ...values, ...local };
      writeFileSync(file, formatDotenv(merged), { mode: 0o600 });
      if (ctx.json) printJson(ctx.io, merged);
      else print(ctx.io, `Wrote ${Object.keys(merged).length} variables to ${file}`);
    },
    (c) => {
      c.option('-o, --output <file>', 'the file', '.env').option('--overwrite', 'replace values already in the file');
      appOption(c);
    },
  );

  r.command(
    'config:push',
    'set the variables of a .env file on an app (SVC_APP and SVC_RELEASE are skipped)',
    async (ctx, _args, options) => {
      const file = String(options.input);
      let values: Record<string, string>;
      try {
        values = userValues(parseDotenv(readFileSync(file, 'utf8')));
      } catch (error) {
        throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
      }
      if (Object.keys(values).length === 0) throw new UsageError(`${file} has no variables to push`);
      await change(ctx, `Pushed ${Object.keys(values).length} variables`, { values });
    },
    (c) => {
      c.option('-i, --input <file>', 'the file', '.env');
      appOption(c);
    },
  );

  r.command(
    'limits',
    "list an app's memory and CPU limits per process type",
    async (ctx) => {
      const config = await ctx.authed().get<ConfigJson>(configPath(ctx.app()));
      if (ctx.json) {
        printJson(ctx.io, { memory: config.memory, cpu: config.cpu });
        return;
      }
      const types = [...new Set([...Object.keys(config.memory), ...Object.keys(config.cpu)])].sort();
      printTable(ctx.io, ['type', 'memory', 'cpu'], types.map((t) => [t, config.memory[t] ?? '-', config.cpu[t] ?? '-']), 'no limits');
    },
    (c) => {
      c.alias('limits:list');
      appOption(c);
    },
  );

  const kind = (options: Record<string, unknown>): 'memory' | 'cpu' => (options.cpu === true ? 'cpu' : 'memory');
  r.command(
    'limits:set <limits...>',
    'set limits (TYPE=VALUE, e.g. web=512M, or with --cpu web=512)',
    async (ctx, args, options) => {
      const which = kind(options);
      await change(ctx, `Set ${which} limits`, { [which]: parsedAssignments(args, 'TYPE=VALUE') });
    },
    (c) => {
      c.option('-m, --memory', 'memory limits (the default)').option('-c, --cpu', 'CPU shares');
      appOption(c);
    },
  );

  r.command(
    'limits:unset <types...>',
    'remove limits of process types',
    async (ctx, types, options) => {
      const which = kind(options);
      await change(ctx, `Unset ${which} limits`, { [which]: Object.fromEntries(types.map((t) => [t, null])) });
    },
    (c) => {
      c.option('-m, --memory', 'memory limits (the default)').option('-c, --cpu', 'CPU shares');
      appOption(c);
    },
  );

  r.command(
    'tags',
    "list an app's tags",
    async (ctx) => {
      const config = await ctx.authed().get<ConfigJson>(configPath(ctx.app()));
      if (ctx.json) printJson(ctx.io, config.tags);
      else printTable(ctx.io, ['tag', 'value'], Object.keys(config.tags).sort().map((k) => [k, config.tags[k]]), 'no tags');
    },
    (c) => {
      c.alias('tags:list');
      appOption(c);
    },
  );

  r.command(
    'tags:set <tags...>',
    'set tags (KEY=VALUE ...)',
    async (ctx, args) => {
      await change(ctx, 'Set tags', { tags: parsedAssignments(args, 'KEY=VALUE') });
    },
    appOption,
  );

  r.command(
    'tags:unset <keys...>',
    'remove tags',
    async (ctx, keys) => {
      await change(ctx, 'Unset tags', { tags: Object.fromEntries(keys.map((k) => [k, null])) });
    },
    appOption,
  );
}
