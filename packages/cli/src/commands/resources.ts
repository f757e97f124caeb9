import { readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { seg } from '../api';
import { appOption, type Registrar } from '../command';
import type { Context } from '../context';
import { CliError, UsageError } from '../errors';
import { print, printFields, printJson, printTable, prompt } from '../output';

interface DomainJson {
  domain: string;
  owner: string;
  created: string;
}

interface KeyJson {
  id: string;
  public: string;
  fingerprint?: string;
  created: string;
}

interface CertJson {
  common_name: string;
  expires: string;
  san?: string[];
  fingerprint?: string;
  issuer?: string;
  starts?: string;
  owner?: string;
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
}

/** The public key file to register: the one given, or the one in ~/.ssh (asked on a terminal when several). */
async function publicKeyFile(ctx: Context, given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  const dir = join(ctx.env.HOME ?? homedir(), '.ssh');
  let found: string[] = [];
  try {
    found = readdirSync(dir).filter((f) => f.endsWith('.pub')).sort().map((f) => join(dir, f));
  } catch {
    // No ~/.ssh: nothing to offer.
  }
  if (found.length === 0) throw new UsageError(`no public key in ${dir}: create one with ssh-keygen, or give a file`);
  if (found.length === 1) return found[0] as string;
  if (!ctx.io.in.isTTY) throw new UsageError(`several public keys in ${dir}; give one: ${found.map((f) => basename(f)).join(', ')}`);
  found.forEach((file, i) => ctx.io.err.write(`${i + 1}) ${basename(file)}\n`));
  const choice = Number(await prompt(ctx.io, 'Which key? '));
  const file = found[choice - 1];
  if (file === undefined) throw new UsageError('no such choice');
  return file;
}

/** domains, certs, keys, perms (sharing), users. */
export function registerResources(r: Registrar): void {
  r.command(
    'domains',
    "list an app's custom domains",
    async (ctx) => {
      const domains = await ctx.authed().all<DomainJson>(`/v1/apps/${seg(ctx.app())}/domains/`);
      if (ctx.json) printJson(ctx.io, domains);
      else printTable(ctx.io, ['domain', 'owner', 'created'], domains.map((d) => [d.domain, d.owner, d.created]), 'no domains');
    },
    (c) => {
      c.alias('domains:list');
      appOption(c);
    },
  );
  r.command(
    'domains:add <domain>',
    'route a domain to an app',
    async (ctx, [domain]) => {
      const app = ctx.app();
      const added = await ctx.authed().post<DomainJson>(`/v1/apps/${seg(app)}/domains/`, { domain });
      if (ctx.json) printJson(ctx.io, added);
      else print(ctx.io, `Added ${added.domain} to ${app}`);
    },
    appOption,
  );
  r.command(
    'domains:remove <domain>',
    'remove a domain from an app',
    async (ctx, [domain]) => {
      const app = ctx.app();
      await ctx.authed().delete(`/v1/apps/${seg(app)}/domains/${seg(domain ?? '')}`);
      if (ctx.json) printJson(ctx.io, { removed: domain });
      else print(ctx.io, `Removed ${domain} from ${app}`);
    },
    appOption,
  );

  r.command(
    'certs',
    'list your TLS certificates',
    async (ctx) => {
      const certs = await ctx.authed().all<CertJson>('/v1/certs/');
      if (ctx.json) printJson(ctx.io, certs);
      else printTable(ctx.io, ['common name', 'expires'], certs.map((c) => [c.common_name, c.expires]), 'no certificates');
    },
    (c) => c.alias('certs:list'),
  );
  r.command('certs:info <common-name>', 'show a certificate', async (ctx, [name]) => {
    const cert = await ctx.authed().get<CertJson>(`/v1/certs/${seg(name ?? '')}`);
    if (ctx.json) printJson(ctx.io, cert);
    else
      printFields(ctx.io, [
        ['common name', cert.common_name],
        ['names', (cert.san ?? []).join(', ')],
        ['issuer', cert.issuer],
        ['starts', cert.starts],
        ['expires', cert.expires],
        ['fingerprint', cert.fingerprint],
        ['owner', cert.owner],
      ]);
  });
  r.command(
    'certs:add <certificate> <key>',
    'add a certificate and its private key (PEM files)',
    async (ctx, [certificate, key], options) => {
      const body: Record<string, string> = { certificate: readText(certificate ?? ''), key: readText(key ?? '') };
      if (typeof options.commonName === 'string') body.common_name = options.commonName;
      const cert = await ctx.authed().post<CertJson>('/v1/certs/', body);
      if (ctx.json) printJson(ctx.io, cert);
      else print(ctx.io, `Added certificate ${cert.common_name} (expires ${cert.expires})`);
    },
    (c) => c.option('--common-name <name>', 'use this name instead of the subject common name'),
  );
  r.command('certs:remove <common-name>', 'remove a certificate', async (ctx, [name]) => {
    await ctx.authed().delete(`/v1/certs/${seg(name ?? '')}`);
    if (ctx.json) printJson(ctx.io, { removed: name });
    else print(ctx.io, `Removed certificate ${name}`);
  });

  r.command(
    'keys',
    'list your SSH public keys (used by git push)',
    async (ctx) => {
      const keys = await ctx.authed().all<KeyJson>('/v1/keys/');
      if (ctx.json) printJson(ctx.io, keys);
      else printTable(ctx.io, ['id', 'fingerprint', 'created'], keys.map((k) => [k.id, k.fingerprint, k.created]), 'no keys: add one with `svc keys:add`');
    },
    (c) => c.alias('keys:list'),
  );
  r.command(
    'keys:add [file]',
    'register an SSH public key (default: the one in ~/.ssh/*.pub)',
    async (ctx, [given], options) => {
      const file = await publicKeyFile(ctx, given);
      const text = readText(file).trim();
      const comment = text.split(/\s+/)[2];
      const id = typeof options.id === 'string' ? options.id : (comment ?? basename(file, '.pub'));
      const key = await ctx.authed().post<KeyJson>('/v1/keys/', { id, public: text });
      if (ctx.json) printJson(ctx.io, key);
      else print(ctx.io, `Added key ${key.id} (${key.fingerprint ?? ''}) from ${file}`);
    },
    (c) => c.option('--id <id>', "the key's name (default: the key's comment)"),
  );
  r.command('keys:remove <id>', 'remove an SSH key', async (ctx, [id]) => {
    await ctx.authed().delete(`/v1/keys/${seg(id ?? '')}`);
    if (ctx.json) printJson(ctx.io, { removed: id });
    else print(ctx.io, `Removed key ${id}`);
  });

  r.command(
    'perms',
    "list an app's collaborators (or, with --admin, the administrators)",
    async (ctx, _args, options) => {
      const api = ctx.authed();
      if (options.admin === true) {
        const admins = await api.all<{ username: string }>('/v1/admin/perms/');
        if (ctx.json) printJson(ctx.io, admins);
        else printTable(ctx.io, ['administrator'], admins.map((a) => [a.username]));
        return;
      }
      const { users } = await api.get<{ users: string[] }>(`/v1/apps/${seg(ctx.app())}/perms/`);
      if (ctx.json) printJson(ctx.io, users);
      else printTable(ctx.io, ['collaborator'], users.map((u) => [u]), 'no collaborators');
    },
    (c) => {
      c.aliases(['perms:list', 'sharing']).option('--admin', 'administrators instead of an app');
      appOption(c);
    },
  );
  r.command(
    'perms:create <username>',
    'let a user work on an app (or, with --admin, make them an administrator)',
    async (ctx, [username], options) => {
      const admin = options.admin === true;
      await ctx.authed().post(admin ? '/v1/admin/perms/' : `/v1/apps/${seg(ctx.app())}/perms/`, { username });
      if (ctx.json) printJson(ctx.io, { granted: username });
      else print(ctx.io, admin ? `${username} is an administrator` : `${username} may now work on ${ctx.app()}`);
    },
    (c) => {
      c.alias('sharing:add').option('--admin', 'grant administrator rights instead');
      appOption(c);
    },
  );
  r.command(
    'perms:delete <username>',
    "remove a user's access to an app (or, with --admin, their administrator rights)",
    async (ctx, [username], options) => {
      const admin = options.admin === true;
      await ctx.authed().delete(admin ? `/v1/admin/perms/${seg(username ?? '')}` : `/v1/apps/${seg(ctx.app())}/perms/${seg(username ?? '')}`);
      if (ctx.json) printJson(ctx.io, { revoked: username });
      else print(ctx.io, admin ? `${username} is no longer an administrator` : `${username} may no longer work on ${ctx.app()}`);
    },
    (c) => {
      c.alias('sharing:remove').option('--admin', 'revoke administrator rights instead');
      appOption(c);
    },
  );

  r.command(
    'users',
    'list every user (administrators only)',
    async (ctx) => {
      const users = await ctx.authed().all<{ username: string; email: string; is_superuser: boolean; date_joined: string }>('/v1/users/');
      if (ctx.json) printJson(ctx.io, users);
      else printTable(ctx.io, ['username', 'email', 'admin', 'joined'], users.map((u) => [u.username, u.email, u.is_superuser ? 'yes' : 'no', u.date_joined]));
    },
    (c) => c.alias('users:list'),
  );
}
