import type { Repositories } from '../ports/repositories';
import type { AppTls, TlsName, TlsNameStatus } from '../model/tls';
import { acmeNamesOf, parseTlsSettings } from '../rules/acme';
import { CertificateForServerName } from './resources';
import { loadVisibleApp, logEvent, type Actor, type CoreDependencies } from './context';

/**
 * The app a host name belongs to now: the app that added it as a custom domain, or the app
 * `<app>` of `<app>.<platform domain>`; null for any other name.
 */
export async function appOfName(repos: Repositories, name: string, platformDomain: string): Promise<string | null> {
  const host = name.toLowerCase();
  const suffix = `.${platformDomain.toLowerCase()}`;
  if (host.endsWith(suffix)) {
    const label = host.slice(0, -suffix.length);
    if (label.includes('.')) return null;
    return (await repos.apps.findById(label))?.id ?? null;
  }
  return (await repos.domains.find(host))?.app ?? null;
}

/** Whether an uploaded certificate (one whose owner still controls the name) serves the name, exactly or by its wildcard. */
export async function uploadedCovers(uploaded: CertificateForServerName, name: string): Promise<boolean> {
  if ((await uploaded.execute(name)) !== null) return true;
  const dot = name.indexOf('.');
  return dot > 0 && name.slice(dot + 1).includes('.') && (await uploaded.execute(`*.${name.slice(dot + 1)}`)) !== null;
}

/** Every custom domain of an app, read page by page. */
export async function domainsOf(repos: Repositories, app: string): Promise<string[]> {
  const names: string[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await repos.domains.listForApp(app, { offset, limit: 100 });
    names.push(...page.items.map((domain) => domain.domain));
    if (page.items.length < 100 || names.length >= page.count) return names;
  }
}

/** Whether the operator serves a wildcard certificate for the platform domain (then app names need none of their own). */
export async function hasPlatformWildcard(uploaded: CertificateForServerName, platformDomain: string): Promise<boolean> {
  return (await uploaded.execute(`*.${platformDomain.toLowerCase()}`)) !== null;
}

type TlsDeps = Pick<CoreDependencies, 'uow' | 'settings' | 'tls' | 'acme'>;

function statusOf(name: string, row: TlsName | undefined, uploaded: boolean): TlsNameStatus {
  if (uploaded) return { name, state: 'issued', source: 'uploaded', expires: null, reason: null, nextAttempt: null };
  if (row === undefined) return { name, state: 'none', source: null, expires: null, reason: null, nextAttempt: null };
  return {
    name,
    state: row.state,
    source: 'acme',
    expires: row.expires,
    reason: row.reason,
    nextAttempt: row.state === 'issued' && row.reason === null ? null : row.nextAttempt,
  };
}

/** The TLS state of each of an app's names (custom domains and its platform name) and its HTTPS setting. */
export class GetAppTls {
  constructor(private readonly deps: TlsDeps) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string): Promise<AppTls> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const uploaded = new CertificateForServerName(this.deps);
    const platform = this.deps.settings.platformDomain;
    const names = acmeNamesOf(app.id, await domainsOf(repos, app.id), platform, await hasPlatformWildcard(uploaded, platform));
    // The platform name is listed when a wildcard covers it too: the owner sees it is served.
    const own = `${app.id}.${platform.toLowerCase()}`;
    if (platform.includes('.') && !names.includes(own)) names.push(own);
    const rows = new Map((this.deps.tls ? await this.deps.tls.listForApp(app.id) : []).map((row) => [row.name, row]));
    const statuses: TlsNameStatus[] = [];
    for (const name of names.sort()) {
      const row = rows.get(name);
      statuses.push(statusOf(name, row?.app === app.id ? row : undefined, await uploadedCovers(uploaded, name)));
    }
    return {
      app: app.id,
      httpsRedirect: this.deps.tls ? await this.deps.tls.httpsRedirect(app.id) : false,
      automatic: this.deps.acme != null,
      names: statuses,
    };
  }
}

/** Changes an app's HTTPS setting (redirect plain HTTP once a certificate is issued). */
export class SetAppTls {
  constructor(private readonly deps: TlsDeps & Pick<CoreDependencies, 'clock' | 'logs'>) {}

  /** @throws ValidationFailed (https_redirect); NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, body: unknown): Promise<AppTls> {
    const app = await loadVisibleApp(this.deps.uow.repositories, actor, appId);
    const { httpsRedirect } = parseTlsSettings(body);
    if (this.deps.tls) await this.deps.tls.setHttpsRedirect(app.id, httpsRedirect);
    await logEvent(this.deps, app.id, `${actor.user.username} turned the HTTPS redirect ${httpsRedirect ? 'on' : 'off'}`);
    return new GetAppTls(this.deps).execute(actor, app.id);
  }
}

/**
 * The certificate issued over ACME for a host name, while the name still belongs to the app
 * it was issued for; null otherwise (an uploaded certificate is looked up first, elsewhere).
 */
export class IssuedCertificateFor {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'tls'>) {}

  async execute(name: string): Promise<TlsName | null> {
    if (!this.deps.tls || name.includes('*')) return null;
    const row = await this.deps.tls.find(name.toLowerCase());
    if (row === null || row.certificate === null || row.sealedKey === null) return null;
    const owner = await appOfName(this.deps.uow.repositories, row.name, this.deps.settings.platformDomain);
    return owner === row.app ? row : null;
  }
}

/**
 * Whether plain HTTP requests for a host name of an app are redirected to HTTPS: the app
 * asked for it and a certificate (uploaded or issued) serves the name.
 */
export class HttpsRedirectFor {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'tls'>) {}

  async execute(app: string, host: string): Promise<boolean> {
    if (!this.deps.tls || !(await this.deps.tls.httpsRedirect(app))) return false;
    if ((await new IssuedCertificateFor(this.deps).execute(host)) !== null) return true;
    return uploadedCovers(new CertificateForServerName(this.deps), host);
  }
}
