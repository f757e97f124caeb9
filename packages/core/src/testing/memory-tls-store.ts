import type { IssuanceBackoff, TlsStore } from '../ports/acme';
import type { TlsName } from '../model/tls';

const copy = (row: TlsName): TlsName => ({ ...row, expires: row.expires && new Date(row.expires), nextAttempt: new Date(row.nextAttempt), updated: new Date(row.updated) });

/** TlsStore in memory, for unit tests and embedding without a database. */
export class InMemoryTlsStore implements TlsStore {
  readonly names = new Map<string, TlsName>();
  readonly leases = new Map<string, { holder: string; until: Date }>();
  readonly challenges = new Map<string, { keyAuthorization: string; name: string; expires: Date }>();
  readonly accounts = new Map<string, string>();
  readonly redirects = new Set<string>();
  readonly backoffs = new Map<string, IssuanceBackoff>();
  pausedUntil: Date | null = null;

  async list(): Promise<TlsName[]> {
    return [...this.names.values()].sort((a, b) => a.name.localeCompare(b.name)).map(copy);
  }

  async listForApp(app: string): Promise<TlsName[]> {
    return (await this.list()).filter((row) => row.app === app);
  }

  async find(name: string): Promise<TlsName | null> {
    const row = this.names.get(name);
    return row === undefined ? null : copy(row);
  }

  async insert(name: TlsName): Promise<void> {
    if (!this.names.has(name.name)) this.names.set(name.name, copy(name));
  }

  async save(name: TlsName, holder: string): Promise<boolean> {
    if (this.leases.get(name.name)?.holder !== holder || !this.names.has(name.name)) return false;
    this.names.set(name.name, copy(name));
    return true;
  }

  async remove(name: string): Promise<void> {
    this.names.delete(name);
    this.leases.delete(name);
  }

  async acquire(name: string, holder: string, until: Date, now: Date): Promise<boolean> {
    if (!this.names.has(name)) return false;
    const lease = this.leases.get(name);
    if (lease !== undefined && lease.until.getTime() > now.getTime()) return false;
    this.leases.set(name, { holder, until });
    return true;
  }

  async release(name: string, holder: string): Promise<void> {
    if (this.leases.get(name)?.holder === holder) this.leases.delete(name);
  }

  async challenge(token: string, host: string): Promise<string | null> {
    const found = this.challenges.get(token);
    return found !== undefined && found.name === host.toLowerCase() ? found.keyAuthorization : null;
  }

  async putChallenge(token: string, keyAuthorization: string, name: string, expires: Date): Promise<void> {
    this.challenges.set(token, { keyAuthorization, name, expires });
  }

  async removeChallenge(token: string): Promise<void> {
    this.challenges.delete(token);
  }

  async account(directory: string): Promise<string | null> {
    return this.accounts.get(directory) ?? null;
  }

  async saveAccount(directory: string, sealedKey: string): Promise<string> {
    if (!this.accounts.has(directory)) this.accounts.set(directory, sealedKey);
    return this.accounts.get(directory) as string;
  }

  async httpsRedirect(app: string): Promise<boolean> {
    return this.redirects.has(app);
  }

  async httpsRedirectApps(): Promise<string[]> {
    return [...this.redirects].sort();
  }

  async setHttpsRedirect(app: string, on: boolean): Promise<void> {
    if (on) this.redirects.add(app);
    else this.redirects.delete(app);
  }

  async backoff(name: string, owner: string): Promise<IssuanceBackoff | null> {
    const kept = this.backoffs.get(`${owner}\n${name}`);
    return kept === undefined ? null : { ...kept, nextAttempt: new Date(kept.nextAttempt) };
  }

  async keepBackoff(backoff: IssuanceBackoff): Promise<void> {
    this.backoffs.set(`${backoff.owner}\n${backoff.name}`, { ...backoff, nextAttempt: new Date(backoff.nextAttempt) });
  }

  async forgetBackoff(name: string, owner: string): Promise<void> {
    this.backoffs.delete(`${owner}\n${name}`);
  }

  async forgetBackoffsBefore(cutoff: Date): Promise<void> {
    for (const [key, kept] of this.backoffs) if (kept.nextAttempt.getTime() < cutoff.getTime()) this.backoffs.delete(key);
  }

  async pauseOrders(until: Date): Promise<void> {
    if (this.pausedUntil === null || this.pausedUntil.getTime() < until.getTime()) this.pausedUntil = new Date(until);
  }

  async ordersPausedUntil(now: Date): Promise<Date | null> {
    return this.pausedUntil !== null && this.pausedUntil.getTime() > now.getTime() ? new Date(this.pausedUntil) : null;
  }
}
