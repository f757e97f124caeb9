import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { RenewCertificates, type AcmeObserver, type AcmeSetup, type CoreDependencies, type TlsStore } from '@svc/core';
import { AcmeCertificateAuthority } from '@svc/certs-acme';
import type { AcmeConfig } from './config-acme';

/**
 * Automatic HTTPS as the server runs it: the ACME certificate authority of ACME_DIRECTORY_URL
 * for the core, and the rounds of RenewCertificates in the background, one at a time, every
 * ACME_INTERVAL_SECONDS and soon after an app or domain changed.
 */
export function acmeSetup(config: AcmeConfig | null, observer: AcmeObserver | undefined): AcmeSetup | null {
  if (config === null) return null;
  return {
    authority: new AcmeCertificateAuthority({ directory: config.directory, email: config.email, ca: config.ca }),
    settings: config.settings,
    ...(observer === undefined ? {} : { observer }),
  };
}

/** The name this process takes leases under: host, process and a random part (a restarted process is another holder). */
export function leaseHolder(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/**
 * Runs issuance rounds in the background. A round records the names and queues the due ones
 * (never two rounds doing that at once in one process); the orders then run in the core's
 * slots (ACME_CONCURRENCY) while later rounds go on, so a new name is queued at once even
 * while stalled orders take every slot.
 */
export class AcmeRounds {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> | null = null;
  private readonly ordering = new Set<Promise<void>>();
  private again = false;
  private stopped = false;
  private readonly renew: RenewCertificates;

  constructor(
    deps: Pick<CoreDependencies, 'uow' | 'settings' | 'tls' | 'acme' | 'secrets' | 'clock' | 'logs'>,
    private readonly options: {
      holder: string;
      intervalMs: number;
      logger: Pick<Logger, 'info' | 'warn'>;
      /** Called after a round issued or forgot a certificate: the router looks certificates and routes up again. */
      changed: () => void;
    },
  ) {
    this.renew = new RenewCertificates(deps);
  }

  /** Starts the first round now and the next ones every interval. */
  start(): void {
    this.kick();
  }

  /** Runs a round soon (after the one being queued, if any). */
  kick(): void {
    if (this.stopped) return;
    if (this.running !== null) {
      this.again = true;
      return;
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.round().finally(() => {
      this.running = null;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.kick();
        return;
      }
      this.timer = setTimeout(() => this.kick(), this.options.intervalMs);
      this.timer.unref();
    });
  }

  /** Stops the rounds; resolves once the round being queued and the orders running (if any) ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running;
    await Promise.all([...this.ordering]);
  }

  private async round(): Promise<void> {
    try {
      const started = await this.renew.start(this.options.holder);
      if (started.removed.length > 0) this.options.changed();
      const ordering: Promise<void> = started.settled
        .then((round) => {
          if (round.issued.length > 0 || round.failed.length > 0 || round.removed.length > 0 || round.paused.length > 0) {
            this.options.logger.info({ issued: round.issued, failed: round.failed, removed: round.removed, paused: round.paused, waiting: round.waiting }, 'automatic HTTPS round');
          }
          if (round.issued.length > 0) this.options.changed();
        })
        .catch((error: unknown) => this.options.logger.warn({ err: error }, 'automatic HTTPS order failed; trying again at the next round'))
        .finally(() => this.ordering.delete(ordering));
      this.ordering.add(ordering);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'automatic HTTPS round failed; trying again at the next one');
    }
  }
}

/**
 * Watches the API's requests: once a write to an app or its domains has been answered (a new
 * domain, a new app, a removed one), a round runs soon, so the certificate follows the
 * domain without waiting for the interval.
 */
export function acmeRoundsOnChanges(rounds: AcmeRounds): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    const path = req.url ?? '';
    if (!path.includes('/apps') && !path.includes('/certs')) return;
    res.once('finish', () => {
      if (res.statusCode < 400) rounds.kick();
    });
  };
}

/** The TLS store of the database, and what the core needs of automatic HTTPS. */
export interface HttpsSetup {
  tls: TlsStore;
  acme: AcmeSetup | null;
}
