import { seg } from '../api';
import { appOption, type Registrar } from '../command';
import type { Context } from '../context';
import { UsageError } from '../errors';
import { print, printJson, printTable } from '../output';

interface TlsNameJson {
  name: string;
  state: string;
  source: string | null;
  expires: string | null;
  reason: string | null;
  next_attempt: string | null;
}

interface AppTlsJson {
  app: string;
  https_redirect: boolean;
  automatic: boolean;
  names: TlsNameJson[];
}

/** One line per name: its state, where the certificate comes from, until when, and why it failed. */
export function tlsRows(tls: AppTlsJson): string[][] {
  return tls.names.map((name) => [
    name.name,
    name.state,
    name.source ?? '',
    name.expires ?? '',
    name.state === 'issued' && name.reason === null ? '' : [name.reason, name.next_attempt === null ? null : `next attempt ${name.next_attempt}`].filter(Boolean).join('; '),
  ]);
}

function show(ctx: Context, tls: AppTlsJson): void {
  if (ctx.json) {
    printJson(ctx.io, tls);
    return;
  }
  printTable(ctx.io, ['name', 'state', 'source', 'expires', 'detail'], tlsRows(tls), 'no names');
  print(ctx.io, `HTTPS redirect: ${tls.https_redirect ? 'on' : 'off'}; automatic certificates: ${tls.automatic ? 'on' : 'off (the operator has not set ACME_DIRECTORY_URL)'}`);
}

/** tls (automatic HTTPS): each name's certificate state, and the HTTPS redirect. */
export function registerTls(r: Registrar): void {
  r.command(
    'tls',
    "show the TLS state of an app's names: none, pending, issued (with expiry), failed (with reason)",
    async (ctx) => show(ctx, await ctx.authed().get<AppTlsJson>(`/v1/apps/${seg(ctx.app())}/tls/`)),
    (c) => {
      c.alias('tls:info');
      appOption(c);
    },
  );
  r.command(
    'tls:redirect <on|off>',
    'answer plain HTTP with a redirect to HTTPS (308) for each name that has a certificate, or stop',
    async (ctx, [value]) => {
      if (value !== 'on' && value !== 'off') throw new UsageError('give on or off');
      show(ctx, await ctx.authed().post<AppTlsJson>(`/v1/apps/${seg(ctx.app())}/tls/`, { https_redirect: value === 'on' }));
    },
    appOption,
  );
}
