import { createSecureContext, type SecureContext } from 'node:tls';
import { hostNameOf, wildcardOf } from './host';
import type { CertificateStore, RouterLogger } from './ports';

/** Options of SecureContextCache. */
export interface SecureContextCacheOptions {
  /** How long a certificate found is used before it is looked up again. Default 30 s. */
  ttlMs?: number;
  /** How long "no certificate for this name" is remembered. Default 5 s. */
  missTtlMs?: number;
  /** Server names remembered at most; the oldest are forgotten first. Default 1000. */
  maxEntries?: number;
  /** The current time in milliseconds, for tests. */
  now?: () => number;
}

interface Entry {
  context: SecureContext | null;
  expires: number;
}

/**
 * The TLS contexts of server names, looked up in a CertificateStore by exact name and then
 * by the wildcard name one level up (`*.example.com` for `www.example.com`), and kept for a
 * short time so that a replaced or deleted certificate is noticed soon without a lookup per
 * connection. Concurrent handshakes for one name share one lookup.
 */
export class SecureContextCache {
  private readonly entries = new Map<string, Entry>();
  private readonly lookups = new Map<string, Promise<SecureContext | null>>();
  private readonly ttlMs: number;
  private readonly missTtlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly store: CertificateStore,
    private readonly logger: RouterLogger,
    options: SecureContextCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.missTtlMs = options.missTtlMs ?? 5_000;
    this.maxEntries = options.maxEntries ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /**
   * The context to present for a server name, or null when no certificate covers it.
   * @throws Error (as a rejection) when the store fails; nothing is remembered then.
   */
  async contextFor(serverName: string): Promise<SecureContext | null> {
    const name = hostNameOf(serverName);
    if (name === null) return null;
    const cached = this.entries.get(name);
    if (cached !== undefined && cached.expires > this.now()) return cached.context;
    const running = this.lookups.get(name);
    if (running !== undefined) return running;
    const lookup = this.lookup(name).finally(() => this.lookups.delete(name));
    this.lookups.set(name, lookup);
    return lookup;
  }

  /** Forgets what is known of one server name, or of all of them. */
  invalidate(serverName?: string): void {
    if (serverName === undefined) this.entries.clear();
    else this.entries.delete(hostNameOf(serverName) ?? serverName);
  }

  /** The SNICallback of a TLS server. */
  readonly sniCallback = (serverName: string, done: (error: Error | null, context?: SecureContext) => void): void => {
    this.contextFor(serverName).then(
      (context) => (context === null ? done(new Error(`No certificate for ${serverName}`)) : done(null, context)),
      (error: unknown) => {
        this.logger.error({ serverName, err: error }, 'certificate lookup failed');
        done(error instanceof Error ? error : new Error('certificate lookup failed'));
      },
    );
  };

  private async lookup(name: string): Promise<SecureContext | null> {
    const wildcard = wildcardOf(name);
    const found = (await this.store.find(name)) ?? (wildcard === null ? null : await this.store.find(wildcard));
    let context: SecureContext | null = null;
    if (found !== null) {
      try {
        context = createSecureContext({ cert: found.certificate, key: found.key });
      } catch (error) {
        this.logger.error({ serverName: name, err: error }, 'stored certificate cannot be used');
      }
    }
    this.remember(name, { context, expires: this.now() + (context === null ? this.missTtlMs : this.ttlMs) });
    return context;
  }

  private remember(name: string, entry: Entry): void {
    this.entries.delete(name);
    this.entries.set(name, entry);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
  }
}
