import { IssuanceFailed, type ChallengeBoard, type TlsStore } from '../ports/acme';
import type { TlsName } from '../model/tls';
import { acmeNamesOf, issuanceDue, nextAttemptAfterFailure } from '../rules/acme';
import type { Repositories } from '../ports/repositories';
import { CertificateForServerName } from './resources';
import { domainsOf, hasPlatformWildcard, uploadedCovers } from './tls';
import { logEvent, type CoreDependencies } from './context';

/** What one round of issuance and renewal did. */
export interface RenewalRound {
  issued: string[];
  failed: string[];
  /** Names recorded for the first time (pending). */
  added: string[];
  /** Names forgotten: their domain or app is gone, or moved to another app. */
  removed: string[];
}

/** The longest an answer to a challenge stays published. */
const CHALLENGE_TTL_MS = 60 * 60 * 1000;

/** Every app's ACME names: name to app. */
async function wantedNames(repos: Repositories, platformDomain: string, wildcard: boolean): Promise<Map<string, string>> {
  const wanted = new Map<string, string>();
  for (let offset = 0; ; offset += 100) {
    const page = await repos.apps.listVisibleTo(null, { offset, limit: 100 });
    for (const app of page.items) {
      for (const name of acmeNamesOf(app.id, await domainsOf(repos, app.id), platformDomain, wildcard)) wanted.set(name, app.id);
    }
    if (page.items.length < 100) return wanted;
  }
}

/** Publishes challenge answers in the TLS store, where every controller process's router finds them. */
class StoredChallenges implements ChallengeBoard {
  constructor(
    private readonly tls: TlsStore,
    private readonly now: () => Date,
  ) {}

  publish(token: string, keyAuthorization: string, name: string): Promise<void> {
    return this.tls.putChallenge(token, keyAuthorization, name, new Date(this.now().getTime() + CHALLENGE_TTL_MS));
  }

  withdraw(token: string): Promise<void> {
    return this.tls.removeChallenge(token);
  }
}

/**
 * One round of automatic HTTPS: records the names every app should have a certificate for
 * (custom domains; `<app>.<platform domain>` without an operator wildcard), forgets the
 * names no app has any more, and issues or renews each name that is due, under a lease per
 * name so that only one controller process works on a name at a time. A name an uploaded
 * certificate serves is left alone (the upload wins). A failure is recorded with its reason
 * and the next attempt is put off (doubling backoff, or the server's Retry-After if later).
 */
export class RenewCertificates {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'tls' | 'acme' | 'secrets' | 'clock' | 'logs'>) {}

  /** `holder` names this process in the leases it takes. */
  async execute(holder: string): Promise<RenewalRound> {
    const round: RenewalRound = { issued: [], failed: [], added: [], removed: [] };
    const { tls, acme } = this.deps;
    if (!tls || !acme) return round;
    const repos = this.deps.uow.repositories;
    const uploaded = new CertificateForServerName(this.deps);
    const platform = this.deps.settings.platformDomain;
    const wanted = await wantedNames(repos, platform, await hasPlatformWildcard(uploaded, platform));
    const recorded = new Map((await tls.list()).map((row) => [row.name, row]));
    for (const row of recorded.values()) {
      if (wanted.get(row.name) === row.app) continue;
      await tls.remove(row.name);
      recorded.delete(row.name);
      round.removed.push(row.name);
    }
    for (const [name, app] of wanted) {
      if (recorded.has(name)) continue;
      const now = this.deps.clock.now();
      await tls.insert({ name, app, state: 'pending', certificate: null, sealedKey: null, expires: null, reason: null, failures: 0, nextAttempt: now, updated: now });
      round.added.push(name);
    }
    for (const name of [...wanted.keys()].sort()) {
      const row = await tls.find(name);
      if (row === null || !issuanceDue(row, this.deps.clock.now(), acme.settings)) continue;
      if (await uploadedCovers(uploaded, name)) continue;
      const outcome = await this.attempt(tls, row, holder);
      if (outcome === 'issued') round.issued.push(name);
      else if (outcome === 'failed') round.failed.push(name);
    }
    return round;
  }

  /** Issues one name under its lease; null when another process holds it or finished it first. */
  private async attempt(tls: TlsStore, row: TlsName, holder: string): Promise<'issued' | 'failed' | null> {
    const acme = this.deps.acme!;
    const started = this.deps.clock.now();
    if (!(await tls.acquire(row.name, holder, new Date(started.getTime() + acme.settings.leaseSeconds * 1000), started))) return null;
    try {
      const current = await tls.find(row.name);
      if (current === null || !issuanceDue(current, started, acme.settings)) return null;
      try {
        const accountKey = await this.accountKey(tls);
        const issued = await acme.authority.issue({ name: current.name, accountKey, challenges: new StoredChallenges(tls, () => this.deps.clock.now()) });
        const now = this.deps.clock.now();
        await tls.save(
          { ...current, state: 'issued', certificate: issued.certificate, sealedKey: this.deps.secrets.seal(issued.key), expires: issued.expires, reason: null, failures: 0, nextAttempt: now, updated: now },
          holder,
        );
        acme.observer?.attempted('issued');
        await logEvent(this.deps, current.app, `certificate for ${current.name} issued, valid until ${issued.expires.toISOString()}`);
        return 'issued';
      } catch (error) {
        const now = this.deps.clock.now();
        const reason = error instanceof IssuanceFailed ? error.reason : `the certificate could not be obtained: ${error instanceof Error ? error.message : String(error)}`;
        const retryAfter = error instanceof IssuanceFailed ? error.retryAfter : null;
        const failures = current.failures + 1;
        const nextAttempt = nextAttemptAfterFailure(now, failures, retryAfter, acme.settings);
        // A certificate already issued keeps being served while its renewal is retried.
        const state = current.certificate === null ? 'failed' : 'issued';
        await tls.save({ ...current, state, reason, failures, nextAttempt, updated: now }, holder);
        acme.observer?.attempted('failed');
        await logEvent(this.deps, current.app, `certificate for ${current.name} failed: ${reason}; next attempt after ${nextAttempt.toISOString()}`);
        return 'failed';
      }
    } finally {
      await tls.release(row.name, holder);
    }
  }

  /** The ACME account key of the directory, made and stored sealed on first use. */
  private async accountKey(tls: TlsStore): Promise<string> {
    const authority = this.deps.acme!.authority;
    const sealed = await tls.account(authority.directory);
    if (sealed !== null) return this.deps.secrets.open(sealed);
    const stored = await tls.saveAccount(authority.directory, this.deps.secrets.seal(await authority.createAccountKey()), this.deps.clock.now());
    return this.deps.secrets.open(stored);
  }
}
